"""Writes tensorflow_dense_values.inc: what TensorFlow 2.15's feature columns make of a few
tf.train.Examples — each dense column's tensor (tf.keras.layers.DenseFeatures) and the linear
model's output with known weights — for tests/estimator/feature_columns/columns_test.cc.
(TensorFlow makes shared_embeddings only in graph mode; the C++ test checks them against
embedding_column.)

Run once, by hand, with TensorFlow 2.15 (tensorflow-cpu 2.15.1 was used; CI does not run it):

    build/tf-venv/bin/python tests/estimator/feature_columns/make_tensorflow_dense.py

Every variable gets a known value instead of a random one: an embedding table or a linear weight
of N elements holds (i % 17 - 8) / 10 for i = 0 .. N-1 in row-major order (the C++ test fills
its variables the same way), and the linear bias holds 0.25. Each line of the output is
    {"CASE", {examples...}, {rows, cols}, {values...}},
where CASE names a column of COLUMNS (or "linear_model") and the C++ test builds the same.
Rerunning it rewrites an identical file.
"""

import os

import numpy as np
import tensorflow as tf
from tensorflow_estimator.python.estimator.canned import linear

fc = tf.feature_column


def known_values(shape):
    count = int(np.prod(shape))
    return ((np.arange(count) % 17 - 8) / 10.0).reshape(shape).astype(np.float32)


def known_initializer(shape, dtype=None, partition_info=None):
    return tf.constant(known_values(shape), dtype=dtype or tf.float32)


STRING_FEATURES = {"user", "category", "device", "tags"}
FLOAT_FEATURES = {"age", "price", "tag_weights"}


def example(**features):
    """An Example of `features`; an empty list is an empty list of the feature's kind."""
    feature = {}
    for key, values in features.items():
        if key in STRING_FEATURES:
            feature[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode() for v in values]))
        elif key in FLOAT_FEATURES:
            feature[key] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        else:
            feature[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


# Every example has age and price (numeric columns without defaults need them); the rest vary.
EXAMPLES = [
    example(age=[23.0], price=[1.5, 2.0], user=["u1"], category=["books"], device=["mobile"], hour=[3],
            tags=["a", "b", "c"], tag_weights=[1.0, 0.5, 2.0]),
    example(age=[61.0], price=[0.0, -1.0], user=["u2"], category=["toys"], device=["desktop"], hour=[23],
            tags=["b"], tag_weights=[3.0]),
    example(age=[35.0], price=[10.0, 0.25], user=["someone else"], category=["unknown"], device=["tablet"],
            hour=[0], tags=[], tag_weights=[]),
    example(age=[18.0], price=[0.5, 0.5], user=["u1", "u3"], category=["books", "toys"], device=["mobile"],
            hour=[12, 13], tags=["zzz", "a"], tag_weights=[1.0, 1.0]),
    example(age=[-5.0], price=[2.0, 3.0], user=[], category=[], device=[], hour=[], tags=["c", "c"],
            tag_weights=[0.5, 0.25]),
]

AGE = fc.numeric_column("age")
PRICE = fc.numeric_column("price", shape=(2,))
AGE_BUCKETS = fc.bucketized_column(AGE, boundaries=[18.0, 25.0, 35.0, 50.0])
USER = fc.categorical_column_with_hash_bucket("user", 7)
CATEGORY = fc.categorical_column_with_vocabulary_list("category", ["books", "toys", "garden"], num_oov_buckets=2)
DEVICE = fc.categorical_column_with_vocabulary_list("device", ["mobile", "desktop", "tablet"])
HOUR = fc.categorical_column_with_identity("hour", 24)
TAGS = fc.categorical_column_with_vocabulary_list("tags", ["a", "b", "c"])
WEIGHTED_TAGS = fc.weighted_categorical_column(TAGS, "tag_weights")
CROSS = fc.crossed_column([CATEGORY, "device"], 11)

COLUMNS = {
    "age": AGE,
    "price": PRICE,
    "age_bucketized": AGE_BUCKETS,
    "category_indicator": fc.indicator_column(CATEGORY),
    "hour_indicator": fc.indicator_column(HOUR),
    "tags_weighted_indicator": fc.indicator_column(WEIGHTED_TAGS),
    "cross_indicator": fc.indicator_column(CROSS),
    "bucketized_indicator": fc.indicator_column(AGE_BUCKETS),
    "user_embedding_mean": fc.embedding_column(USER, 3, initializer=known_initializer),
    "tags_embedding_sqrtn": fc.embedding_column(WEIGHTED_TAGS, 2, combiner="sqrtn", initializer=known_initializer),
    "tags_embedding_sum": fc.embedding_column(TAGS, 2, combiner="sum", initializer=known_initializer),
    "category_embedding_max_norm": fc.embedding_column(CATEGORY, 4, max_norm=0.5, initializer=known_initializer),
}

LINEAR_COLUMNS = [AGE, PRICE, AGE_BUCKETS, USER, CATEGORY, CROSS, WEIGHTED_TAGS, HOUR]


def parse(columns):
    spec = fc.make_parse_example_spec(columns)
    return tf.io.parse_example(tf.constant(EXAMPLES), spec)


def dense(column):
    features = parse([column])
    return tf.keras.layers.DenseFeatures([column])(features).numpy()


def linear_output():
    features = parse(LINEAR_COLUMNS)
    layer = linear.LinearModel(LINEAR_COLUMNS, units=1, sparse_combiner="sum")
    layer(features)  # builds the variables
    for variable in layer.variables:
        value = known_values(variable.shape) if "bias" not in variable.name else np.full(variable.shape, 0.25)
        variable.assign(value.astype(np.float32))
    return layer(features).numpy()


def bytes_literal(data):
    return '"' + "".join("\\x%02x" % b for b in data) + '"s'


def main():
    lines = [
        "// Written by make_tensorflow_dense.py with TensorFlow %s; do not edit." % tf.__version__,
        "// {case, {rows, columns}, {values}}; the examples are kTensorFlowExamples.",
    ]
    cases = [(name, dense(column)) for name, column in COLUMNS.items()]
    cases.append(("linear_model", linear_output()))
    for name, values in cases:
        values = np.asarray(values, np.float64)
        lines.append('{"%s", {%d, %d}, {%s}},' % (name, values.shape[0], values.shape[1],
                                                   ", ".join(repr(float(v)) for v in values.reshape(-1))))
    examples = ["// The serialized examples, in order.", "#ifdef EST_TENSORFLOW_EXAMPLES"]
    examples += ["%s," % bytes_literal(e) for e in EXAMPLES]
    examples.append("#else")
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "tensorflow_dense_values.inc"), "w") as out:
        out.write("\n".join(examples + lines + ["#endif"]) + "\n")


if __name__ == "__main__":
    main()
