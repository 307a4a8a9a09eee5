"""Writes tests/checkpoint/tensorflow_checkpoint/: a checkpoint that TensorFlow 2.15 itself
writes (tf.raw_ops.SaveV2 into two prefixes, merged by tf.raw_ops.MergeV2Checkpoints into one
bundle of two data shards, as a sharded tf.compat.v1.train.Saver does), which
bundle_checkpoint_reader_test.cc reads. Every value is a formula the test recomputes; keep the
two in step. Run once, and commit what it writes:

    build/tf-venv/bin/python tests/checkpoint/make_tensorflow_checkpoint.py
"""

import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "tensorflow_checkpoint")


def shard_0():
    """Every dtype the reader converts, strings, a scalar, an empty tensor and the step."""
    return {
        "float32": tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4) * 0.25 - 1),
        "float64": tf.constant(np.arange(10, dtype=np.float64).reshape(2, 5) / 3.0),
        "int32": tf.constant(np.arange(-6, 6, dtype=np.int32).reshape(3, 4)),
        "int64": tf.constant((1 << 40) + np.arange(10, dtype=np.int64)),
        "bool": tf.constant((np.arange(9) % 3 == 0).reshape(3, 3)),
        "half": tf.constant(np.arange(7, dtype=np.float16) * 0.5 - 1.5),
        "bfloat16": tf.cast(tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3) * 0.25),
                            tf.bfloat16),
        "uint8": tf.constant(np.arange(256, dtype=np.uint8)),
        "int8": tf.constant(np.arange(-128, 128, dtype=np.int8)),
        "int16": tf.constant(np.arange(-300, 300, 7, dtype=np.int16)),
        "complex64": tf.constant(np.arange(4, dtype=np.float32) - 0.5j * np.arange(4, dtype=np.float32)),
        "scalar": tf.constant(2.5, dtype=tf.float64),
        "empty": tf.zeros([0, 3], dtype=tf.float32),
        "strings": tf.constant([b"", b"tensor bundle", b"\x00\xff bytes"]),
        "string_scalar": tf.constant(b"hello"),
        "global_step": tf.constant(4242, dtype=tf.int64),
    }


def shard_1():
    """A tensor over 64 KiB, a name with a slash, and a dtype the reader does not convert."""
    return {
        "big": tf.constant(np.arange(20000, dtype=np.float32) * 0.5),
        "dense/kernel": tf.constant(np.array([[1, -2], [3.5, -4.25]], dtype=np.float32)),
        "uint16": tf.constant(np.arange(5, dtype=np.uint16)),
    }


def save(prefix, tensors):
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tensors[name] for name in names])


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    with tempfile.TemporaryDirectory() as parts:
        prefixes = [os.path.join(parts, "part-0"), os.path.join(parts, "part-1")]
        save(prefixes[0], shard_0())
        save(prefixes[1], shard_1())
        tf.raw_ops.MergeV2Checkpoints(checkpoint_prefixes=prefixes,
                                      destination_prefix=os.path.join(OUT, "model.ckpt"),
                                      delete_old_dirs=False)
    reader = tf.train.load_checkpoint(os.path.join(OUT, "model.ckpt"))
    print(sorted(reader.get_variable_to_dtype_map().items()))
    print(sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
