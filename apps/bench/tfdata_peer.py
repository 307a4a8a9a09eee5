"""The tf.data peer of tfrecord_bench (make bench, group input): TensorFlow reading the same
Fashion-MNIST TFRecord shards with the same threads, batched 64, its image bytes decoded to
uint8 [28, 28] as ours are (DecodeRaw), printing one JSON line per figure.

usage: tfdata_peer.py --files GLOB [--compression NONE|GZIP] [--threads 2] [--min-seconds 1]

Figures:
  parse         interleave(TFRecordDataset, cycle_length 4, num_parallel_calls threads)
                .batch(64).map(parse_example + decode_raw, num_parallel_calls threads):
                tf.data's recommended vectorized parse
  parse_single  the same with map(parse_single_example + decode_raw) per record before batch(64),
                as ours parses (one record at a time)
Every pass reads all the files, inside one Dataset.reduce (no Python per batch); a figure runs
whole passes for at least --min-seconds after one untimed pass (which traces the functions and
fills the page cache). Inter-op, intra-op and
tf.data's private thread pool all get --threads threads.
"""

import argparse
import glob
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402  (after the log level)

BATCH = 64
CYCLE_LENGTH = 4  # as est_apps::FashionMnistRecords


def spec():
    return {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}


def decode_batch(records):
    parsed = tf.io.parse_example(records, spec())
    images = tf.reshape(tf.io.decode_raw(parsed["image"], tf.uint8), [-1, 28, 28])
    return images, parsed["label"]


def decode_one(record):
    parsed = tf.io.parse_single_example(record, spec())
    return tf.reshape(tf.io.decode_raw(parsed["image"], tf.uint8), [28, 28]), parsed["label"]


def pipeline(files, compression, threads, figure):
    records = tf.data.Dataset.from_tensor_slices(files).interleave(
        lambda f: tf.data.TFRecordDataset(f, compression_type=compression),
        cycle_length=CYCLE_LENGTH, block_length=1, num_parallel_calls=threads, deterministic=True)
    if figure == "parse":
        dataset = records.batch(BATCH).map(decode_batch, num_parallel_calls=threads)
    else:
        dataset = records.map(decode_one, num_parallel_calls=threads).batch(BATCH)
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    return dataset.with_options(options)


def counter(dataset):
    """A function making one pass over `dataset` inside TensorFlow (no Python per batch, as ours
    has no Python), returning the examples it saw."""
    @tf.function
    def one_pass():
        return dataset.reduce(tf.constant(0, tf.int64), lambda n, batch: n + tf.shape(batch[1], out_type=tf.int64)[0])
    return lambda: int(one_pass())


def measure(files, compression, threads, figure, min_seconds, stored_bytes):
    one_pass = counter(pipeline(files, compression, threads, figure))
    per_pass = one_pass()  # untimed: traces, warms the page cache
    examples, passes = 0, 0
    start = time.perf_counter()
    while True:
        examples += one_pass()
        passes += 1
        seconds = time.perf_counter() - start
        if seconds >= min_seconds:
            break
    return {"bench": "tfdata", "figure": figure, "compression": compression or "NONE", "threads": threads,
            "records_per_sec": examples / seconds, "mb_per_sec": passes * stored_bytes / 1e6 / seconds,
            "records_per_pass": per_pass, "files": len(files), "stored_mb": stored_bytes / 1e6,
            "tensorflow": tf.__version__}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", required=True, help="glob of the TFRecord shards")
    parser.add_argument("--compression", default="NONE", choices=["NONE", "GZIP"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-seconds", type=float, default=1.0)
    parser.add_argument("--figures", default="parse,parse_single")
    args = parser.parse_args()
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    files = sorted(glob.glob(args.files))
    if not files:
        parser.error(f"--files {args.files} matches no file")
    stored_bytes = sum(os.path.getsize(f) for f in files)
    compression = "" if args.compression == "NONE" else args.compression
    for figure in args.figures.split(","):
        print(json.dumps(measure(files, compression, args.threads, figure, args.min_seconds, stored_bytes)),
              flush=True)


if __name__ == "__main__":
    main()
