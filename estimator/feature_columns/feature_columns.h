#pragma once
/// Every feature column of est::feature_columns, for a model that reads tf.train.Examples the
/// way TensorFlow's canned estimators do:
///
///   namespace fc = est::feature_columns;
///   auto age = fc::numeric_column("age");
///   auto user = fc::categorical_column_with_hash_bucket("user", 10000);
///   std::vector<fc::FeatureColumnPtr> columns{fc::bucketized_column(age, {18, 25, 35}),
///                                             fc::embedding_column(user, 8)};
///   fc::ParsingPlan plan(columns);            // plan.example_spec() parses the records
///   fc::ColumnInputs inputs(features, plan);  // in model_fn, over the parsed batch

#include "estimator/feature_columns/bucketized_column.h"
#include "estimator/feature_columns/column_inputs.h"
#include "estimator/feature_columns/crossed_column.h"
#include "estimator/feature_columns/embedding_column.h"
#include "estimator/feature_columns/feature_column.h"
#include "estimator/feature_columns/hashed_column.h"
#include "estimator/feature_columns/identity_column.h"
#include "estimator/feature_columns/indicator_column.h"
#include "estimator/feature_columns/input_layer.h"
#include "estimator/feature_columns/linear_model.h"
#include "estimator/feature_columns/numeric_column.h"
#include "estimator/feature_columns/parsing_plan.h"
#include "estimator/feature_columns/vocabulary_column.h"
#include "estimator/feature_columns/weighted_column.h"
