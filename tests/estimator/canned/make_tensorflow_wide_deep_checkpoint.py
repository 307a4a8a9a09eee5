"""Writes tensorflow_wide_deep_checkpoint/: a checkpoint written by TensorFlow 2.15's own
tf.estimator.DNNLinearCombinedClassifier, with 32 examples and TensorFlow's predictions on them,
for warm-starting and checking the wide & deep estimator of estimator/canned/ from a TensorFlow
checkpoint.

Run once, by hand, with TensorFlow 2.15 (tensorflow-cpu 2.15.1 was used; CI does not run it):

    build/tf-venv/bin/python tests/estimator/canned/make_tensorflow_wide_deep_checkpoint.py

The model is small (TENSORFLOW_CANNED_FACTS.md lists its variables). Its feature columns are
those of tensorflow_canned.feature_columns with
    user_buckets=100, cross_buckets=50, user_dim=4, tags_dim=2:
linear part (combiner "sum", weights summed in column-name order, plus bias_weights):
    categorical_column_with_hash_bucket("user", 100)
    categorical_column_with_vocabulary_list("category", ctr_data.CATEGORIES, num_oov_buckets=2)
    categorical_column_with_vocabulary_list("device", ["mobile", "desktop", "tablet"])
    crossed_column(["category", "device"], 50)
    categorical_column_with_identity("hour", 24)
    bucketized_column(numeric_column("age"), [18, 25, 30, 35, 40, 45, 50, 55, 60, 65])
    numeric_column("price")
    categorical_column_with_vocabulary_list("tags", ctr_data.TAGS)
dnn part (DenseFeatures concatenates them in column-name order: age, category_indicator,
device_indicator, hour_indicator, price, tags_embedding, user_embedding; 67 inputs):
    embedding_column(user, 4), indicator_column(category), indicator_column(device),
    indicator_column(hour), numeric_column("age", normalizer_fn=lambda x: (x - 40.0) / 15.0),
    numeric_column("price", normalizer_fn=lambda x: (x - 3.0) / 2.0),
    embedding_column(tags, 2, combiner="mean")
and DNNLinearCombinedClassifier(dnn_hidden_units=[8, 4]) with
    linear_optimizer=tf.keras.optimizers.legacy.Ftrl(learning_rate=0.1),
    dnn_optimizer=tf.keras.optimizers.legacy.Adagrad(learning_rate=0.05),
(other arguments their defaults; larger rates than the defaults, 0.005 and 0.001, so that 50
steps move the weights well away from their initial values), RunConfig(tf_random_seed=SEED) and
one thread per session. It trains for STEPS steps of BATCH_SIZE examples on the TRAIN_ROWS rows
of ctr_data.generate(SEED, TRAIN_ROWS, 32) in order, one pass.

Files written (the final checkpoint only: no graph .meta, no events):
    checkpoint                           the state file, naming model.ckpt-50;
    model.ckpt-50.index, model.ckpt-50.data-00000-of-00001;
    examples.tfrecord                    the 32 eval rows of ctr_data.generate, labels included;
    predictions.json                     estimator.predict on them: per example logits, logistic,
                                         probabilities and class_ids (floats are float32 values,
                                         written in full).
Rerunning it rewrites identical files.
"""

import json
import os
import shutil
import tempfile

import tensorflow as tf

import ctr_data
import tensorflow_canned

SEED = 73
TRAIN_ROWS = 2000
EVAL_ROWS = 32
BATCH_SIZE = 40
STEPS = 50
SIZES = {"user_buckets": 100, "cross_buckets": 50, "user_dim": 4, "tags_dim": 2}


def main():
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensorflow_wide_deep_checkpoint")
    os.makedirs(out_dir, exist_ok=True)
    _, (train, _), (evaluation, _) = ctr_data.generate(SEED, TRAIN_ROWS, EVAL_ROWS)
    examples = os.path.join(out_dir, "examples.tfrecord")
    ctr_data.write_tfrecord(examples, evaluation)
    linear, dnn = tensorflow_canned.feature_columns(**SIZES)
    with tempfile.TemporaryDirectory() as work:
        train_path = os.path.join(work, "train.tfrecord")
        ctr_data.write_tfrecord(train_path, train)
        model_dir = os.path.join(work, "model")
        session_config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
        config = tf.estimator.RunConfig(model_dir=model_dir, tf_random_seed=SEED, session_config=session_config)
        estimator = tf.estimator.DNNLinearCombinedClassifier(
            linear_feature_columns=linear,
            linear_optimizer=lambda: tf.keras.optimizers.legacy.Ftrl(learning_rate=0.1),
            dnn_feature_columns=dnn,
            dnn_optimizer=lambda: tf.keras.optimizers.legacy.Adagrad(learning_rate=0.05),
            dnn_hidden_units=[8, 4],
            config=config)
        estimator.train(tensorflow_canned.input_fn(train_path, linear + dnn, "clicked", BATCH_SIZE, False),
                        steps=STEPS)
        prefix = os.path.basename(estimator.latest_checkpoint())
        assert prefix == "model.ckpt-%d" % STEPS, prefix
        for suffix in [".index", ".data-00000-of-00001"]:
            shutil.copyfile(os.path.join(model_dir, prefix + suffix), os.path.join(out_dir, prefix + suffix))
        with open(os.path.join(out_dir, "checkpoint"), "w") as out:
            out.write('model_checkpoint_path: "%s"\nall_model_checkpoint_paths: "%s"\n' % (prefix, prefix))
        predictions = [
            {"logits": p["logits"].tolist(), "logistic": p["logistic"].tolist(),
             "probabilities": p["probabilities"].tolist(), "class_ids": p["class_ids"].tolist()}
            for p in estimator.predict(tensorflow_canned.input_fn(examples, linear + dnn, None, EVAL_ROWS, False))
        ]
    assert len(predictions) == EVAL_ROWS
    with open(os.path.join(out_dir, "predictions.json"), "w") as out:
        out.write('{"tensorflow": "%s", "checkpoint": "%s", "predictions": [\n%s\n]}\n'
                  % (tf.__version__, prefix, ",\n".join(json.dumps(p) for p in predictions)))


if __name__ == "__main__":
    main()
