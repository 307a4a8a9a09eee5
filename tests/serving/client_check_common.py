"""What the client checks of est-serve share (triton_client_check.py, tf_serving_client_check.py):
their arguments, the check helpers, and how a run of checks is reported. Imports nothing but the
standard library, so that each client's virtual environment runs it."""

import argparse
import json

# The largest difference allowed between a served "y" and Estimator::predict's.
Y_TOLERANCE = 1e-6
# Seconds each call may take.
CALL_TIMEOUT_S = 60


class CheckFailed(Exception):
    """A check that did not hold."""


def check(condition, what):
    if not condition:
        raise CheckFailed(what)


def refusal(call, error_type):
    """The `error_type` exception `call` raises; CheckFailed when it succeeds."""
    try:
        call()
    except error_type as error:
        return error
    raise CheckFailed("the call succeeded; expected an error")


def check_message(message, words, what):
    """Each of `words` is in the error message `message`."""
    for word in words:
        check(word in message, f"{what}: the message does not name {word!r}: {message}")


def parse_arguments(description):
    """The server's address, the model's name and served version, expected.json, the token and
    certificate authority when the server has them, and whether it takes records."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--expected", required=True)
    parser.add_argument("--token", default="")
    parser.add_argument("--ca", default="")
    parser.add_argument("--records", action="store_true",
                        help="the server takes serialized tf.train.Example records in 'examples'")
    return parser.parse_args()


def load_expected(path):
    """expected.json's rows and Estimator::predict's answers for them: x (float32 [n, 3]), y
    (float32 [n]), positive (bool [n]), and the rows' tf.train.Example records as bytes. NumPy,
    which every client's environment has, is imported here only."""
    import numpy as np
    with open(path) as file:
        expected = json.load(file)
    return (np.array(expected["x"], dtype=np.float32), np.array(expected["y"], dtype=np.float32),
            np.array(expected["positive"], dtype=bool), [bytes.fromhex(r) for r in expected["records"]])


class Versioned:
    """expected.json's model "versioned": its name, its two versions as strings (first, whose
    answers are expected.json's own, and newest), and the newest's answers y and positive."""

    def __init__(self, path):
        import numpy as np
        with open(path) as file:
            expected = json.load(file)
        versioned = expected["versioned"]
        self.name = versioned["name"]
        self.first = str(versioned["first"])
        self.newest = str(versioned["newest"])
        self.y = np.array(versioned["y"], dtype=np.float32)
        self.positive = np.array(versioned["positive"], dtype=bool)
        # The versions must answer differently for the checks to tell which one answered.
        check(np.abs(self.y - np.array(expected["y"], dtype=np.float32)).max() > 1e-4,
              "the model 'versioned' answers alike in both versions")

    def check_y(self, y, expected, what):
        """`y` (a sequence of floats) is `expected` within Y_TOLERANCE."""
        import numpy as np
        y = np.asarray(y, dtype=np.float32)
        check(y.shape == expected.shape, f"{what}: y has shape {y.shape}, expected {expected.shape}")
        difference = np.abs(y - expected).max()
        check(difference <= Y_TOLERANCE, f"{what}: y differs from that version's answers by {difference}")


def run_checks(client, args, steps, describe_error, close):
    """Runs `steps` in turn and prints the outcome as `client`: 0 when all held, else 1. A
    CheckFailed, or an exception describe_error turns into a text (None for others), fails."""
    try:
        for step in steps:
            step()
    except CheckFailed as failure:
        print(f"{client}: failed: {failure}")
        return 1
    except Exception as error:  # noqa: BLE001 (a client's own errors, described by it)
        described = describe_error(error)
        if described is None:
            raise
        print(f"{client}: failed: {described}")
        return 1
    finally:
        close()
    print(f"{client}: ok ({len(steps)} group{'' if len(steps) == 1 else 's'} of checks"
          f"{', token' if args.token else ''}{', TLS' if args.ca else ''}"
          f"{', records' if args.records else ''})")
    return 0
