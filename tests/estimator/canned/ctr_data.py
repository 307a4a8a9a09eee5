"""A deterministic click-through data set with a known logistic ground truth, for comparing the
canned estimators of estimator/canned/ with TensorFlow 2.15's own (tensorflow_canned.py,
make_tensorflow_wide_deep_checkpoint.py).

Run by hand with TensorFlow 2.15 (tensorflow-cpu 2.15.1 was used; CI does not run it):

    build/tf-venv/bin/python tests/estimator/canned/ctr_data.py OUT_DIR \
        --train-rows 100000 --eval-rows 20000 --seed 73

It writes OUT_DIR/train.tfrecord and OUT_DIR/eval.tfrecord: uncompressed TFRecord files of
tf.train.Example records, serialized deterministically, so that rerunning with the same
arguments rewrites identical files. Importing it gives World (the ground truth drawn from a seed),
World.sample (rows as numpy arrays) and write_tfrecord.

Features of every example (each always present; `tags` may be empty):
    user      bytes   "u0".."u19999"; ranks drawn from a Zipf-like law p(rank) ~ 1/(rank + 10)^1.1,
                      ranks mapped to ids by a fixed permutation, so some users are frequent;
    category  bytes   one of CATEGORIES (30 ad categories), or, for about 2% of the rows, one of
                      OOV_CATEGORIES, which lie outside the vocabulary;
    device    bytes   "mobile" (60%), "desktop" (30%) or "tablet" (10%);
    hour      int64   0..23, more rows in the day than at night;
    age       float   normal(38, 12) clipped to [16, 80];
    price     float   log-normal: exp(normal(1, 0.6)), median 2.7;
    tags      bytes   0 to 3 distinct values of TAGS (50 tags), a variable-length list;
    clicked   int64   the label, 1 with probability sigmoid(logit);
    spend     float   the regression target.

The ground-truth logit is a sum of per-value effects, each drawn once from the seed:
    BIAS + user[user] + category[category] + device[device] + category_device[category, device]
    + hour[hour] + 1.2 * exp(-((age - 30) / 8)^2) - price_slope[device] * price
    + mean(tag[t] for t in tags) + 1.2 * (age < 30 and device == "mobile"),
with price_slope = 0.45, 0.0, 0.15 for mobile, desktop, tablet. A bucketized age and a
category x device cross model all of it but the price x device and age x device interactions,
which a deep model can learn; the ground truth itself has an eval AUC of 0.79 and the click
rate is about 0.25.
    spend = 3 + user_spend[user] + category_spend[category] + 0.8 * sqrt(price) * device_scale[device]
            + 0.002 * (age - 45)^2 + 0.4 * len(tags) + normal(0, 0.5).
"""

import argparse
import os

import numpy as np
import tensorflow as tf

NUM_USERS = 20000
CATEGORIES = [
    "apparel", "automotive", "baby", "beauty", "books", "cameras", "charity", "dating", "education",
    "electronics", "finance", "food", "furniture", "games", "garden", "health", "home", "insurance",
    "jewelry", "movies", "music", "news", "pets", "real_estate", "shoes", "software", "sports",
    "telecom", "toys", "travel",
]
OOV_CATEGORIES = ["crafts", "gambling", "legal", "tobacco", "weddings"]
OOV_FRACTION = 0.02
DEVICES = ["mobile", "desktop", "tablet"]
DEVICE_PROBABILITIES = [0.6, 0.3, 0.1]
TAGS = ["tag%02d" % i for i in range(50)]
MAX_TAGS = 3
BIAS = -1.3


class World:
    """The ground truth: every per-value effect, drawn once from `seed`."""

    def __init__(self, seed):
        rng = np.random.default_rng(seed)
        ranks = np.arange(NUM_USERS)
        weights = 1.0 / (ranks + 10.0) ** 1.1
        self.user_probabilities = weights / weights.sum()
        self.user_of_rank = rng.permutation(NUM_USERS)
        self.user_effect = rng.normal(0.0, 0.6, NUM_USERS)
        self.user_spend = rng.normal(0.0, 1.0, NUM_USERS)
        num_categories = len(CATEGORIES) + len(OOV_CATEGORIES)
        self.category_probabilities = rng.dirichlet(np.full(len(CATEGORIES), 2.0))
        self.category_effect = rng.normal(0.0, 0.4, num_categories)
        self.category_spend = rng.normal(0.0, 1.0, num_categories)
        self.device_effect = np.array([0.2, -0.1, 0.0])
        self.device_price_slope = np.array([0.45, 0.0, 0.15])
        self.device_scale = np.array([0.7, 1.3, 1.0])
        self.category_device_effect = rng.normal(0.0, 0.4, (num_categories, len(DEVICES)))
        hours = np.arange(24)
        self.hour_effect = 0.3 * np.sin(2.0 * np.pi * (hours - 14) / 24.0) + rng.normal(0.0, 0.05, 24)
        hour_weights = 1.5 + np.sin(2.0 * np.pi * (hours - 8) / 24.0)
        self.hour_probabilities = hour_weights / hour_weights.sum()
        self.tag_effect = rng.normal(0.0, 0.5, len(TAGS))

    def sample(self, rows, rng):
        """Returns `rows` examples as a dict of numpy arrays (`tags` a list of index arrays) and
        the ground-truth logits."""
        user = self.user_of_rank[rng.choice(NUM_USERS, size=rows, p=self.user_probabilities)]
        category = rng.choice(len(CATEGORIES), size=rows, p=self.category_probabilities)
        oov = rng.random(rows) < OOV_FRACTION
        category[oov] = len(CATEGORIES) + rng.integers(0, len(OOV_CATEGORIES), size=oov.sum())
        device = rng.choice(len(DEVICES), size=rows, p=DEVICE_PROBABILITIES)
        hour = rng.choice(24, size=rows, p=self.hour_probabilities)
        age = np.clip(rng.normal(38.0, 12.0, rows), 16.0, 80.0).astype(np.float32)
        price = np.exp(rng.normal(1.0, 0.6, rows)).astype(np.float32)
        num_tags = rng.integers(0, MAX_TAGS + 1, size=rows)
        tags = [rng.choice(len(TAGS), size=n, replace=False) for n in num_tags]
        tag_mean = np.array([self.tag_effect[t].mean() if len(t) else 0.0 for t in tags])
        a = age.astype(np.float64)
        p = price.astype(np.float64)
        logit = (BIAS + self.user_effect[user] + self.category_effect[category] + self.device_effect[device]
                 + self.category_device_effect[category, device] + self.hour_effect[hour]
                 + 1.2 * np.exp(-((a - 30.0) / 8.0) ** 2) - self.device_price_slope[device] * p + tag_mean
                 + 1.2 * ((a < 30.0) & (device == 0)))
        clicked = (rng.random(rows) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
        spend = (3.0 + self.user_spend[user] + self.category_spend[category]
                 + 0.8 * np.sqrt(p) * self.device_scale[device] + 0.002 * (a - 45.0) ** 2
                 + 0.4 * num_tags + rng.normal(0.0, 0.5, rows)).astype(np.float32)
        data = {"user": user, "category": category, "device": device, "hour": hour, "age": age,
                "price": price, "tags": tags, "clicked": clicked, "spend": spend}
        return data, logit


def _bytes(values):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode() for v in values]))


def _int64(value):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(value)]))


def _float(value):
    return tf.train.Feature(float_list=tf.train.FloatList(value=[float(value)]))


def to_example(data, i):
    """Returns row `i` of `data` (as World.sample gives it) as a tf.train.Example."""
    all_categories = CATEGORIES + OOV_CATEGORIES
    return tf.train.Example(features=tf.train.Features(feature={
        "user": _bytes(["u%d" % data["user"][i]]),
        "category": _bytes([all_categories[data["category"][i]]]),
        "device": _bytes([DEVICES[data["device"][i]]]),
        "hour": _int64(data["hour"][i]),
        "age": _float(data["age"][i]),
        "price": _float(data["price"][i]),
        "tags": _bytes([TAGS[t] for t in data["tags"][i]]),
        "clicked": _int64(data["clicked"][i]),
        "spend": _float(data["spend"][i]),
    }))


def write_tfrecord(path, data):
    """Writes every row of `data` to the TFRecord file `path`."""
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(len(data["clicked"])):
            writer.write(to_example(data, i).SerializeToString(deterministic=True))


def generate(seed, train_rows, eval_rows):
    """Returns the World of `seed` and its (data, logits) train and eval samples."""
    world_seed, train_seed, eval_seed = np.random.SeedSequence(seed).spawn(3)
    world = World(world_seed)
    train = world.sample(train_rows, np.random.default_rng(train_seed))
    evaluation = world.sample(eval_rows, np.random.default_rng(eval_seed))
    return world, train, evaluation


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--train-rows", type=int, default=100000)
    parser.add_argument("--eval-rows", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=73)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    _, (train, _), (evaluation, eval_logits) = generate(args.seed, args.train_rows, args.eval_rows)
    write_tfrecord(os.path.join(args.out_dir, "train.tfrecord"), train)
    write_tfrecord(os.path.join(args.out_dir, "eval.tfrecord"), evaluation)
    auc = tf.keras.metrics.AUC(num_thresholds=10000)
    auc.update_state(evaluation["clicked"], 1.0 / (1.0 + np.exp(-eval_logits)))
    print("train rows %d (click rate %.4f), eval rows %d (click rate %.4f), ground-truth eval AUC %.4f"
          % (args.train_rows, train["clicked"].mean(), args.eval_rows, evaluation["clicked"].mean(),
             auc.result().numpy()))


if __name__ == "__main__":
    main()
