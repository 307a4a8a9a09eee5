"""Our model server against the real Python clients of the protocols it speaks: Triton's
tritonclient[grpc] and tritonclient[http] (KServe v2 / Open Inference Protocol over gRPC and
HTTP), tensorflow-serving-api (TensorFlow Serving's PredictionService) and requests (TensorFlow
Serving's REST API, as its documentation writes the requests). serving_fixture serves a model it
trained, four times: plainly, with a token, over TLS, and taking serialized tf.train.Example
records; each time triton_client_check.py, triton_http_client_check.py,
tf_serving_client_check.py and tf_serving_rest_check.py run in their virtual environments
(`make serving-clients`) and check its answers against what Estimator::predict answered (the
fixture's expected.json).

Every client must run: where one's environment is missing or cannot import it, the test fails
naming it and what installs it (`make test` does), checking nothing.
Exits 0 when every check passed, 1 otherwise (a failed run's directory is kept).

usage: real_clients_test.py SERVING_FIXTURE TRITON_PYTHON TF_SERVING_PYTHON
"""

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = "served_regression"  # RegressionIdentity() of tests/serving/serving_models.h
# Seconds the fixture may take to train, export and listen; to stop; a client's checks.
START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 60
CHECK_TIMEOUT_S = 300


class Client:
    """One protocol's client: its name, the module its environment must import, its checks."""

    def __init__(self, name, module, script, port):
        self.name = name
        self.module = module
        self.script = os.path.join(HERE, script)
        self.port = port  # the key of the port it calls in server.json: "port" or "rest_port"
        self.python = None

    def unusable(self, python):
        """Why `python` cannot run this client's checks; None when it can."""
        if not os.path.exists(python):
            return f"{python} is missing (`make serving-clients` creates it)"
        try:
            probe = subprocess.run([python, "-c", f"import {self.module}"], capture_output=True,
                                   text=True, timeout=CHECK_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"{python} does not run: {error}"
        if probe.returncode != 0:
            lines = probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"]
            return f"{python} cannot import {self.module}: {lines[-1]}"
        self.python = python
        return None


class Failed(Exception):
    """The fixture did not start or stop as it should."""


class Fixture:
    """serving_fixture serving in `directory` until closed; `server` is its server.json."""

    def __init__(self, program, directory, options):
        self.directory = directory
        self.log_path = os.path.join(directory, "fixture.log")
        os.makedirs(directory)
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen([program, "--dir", directory] + options,
                                            stdin=subprocess.PIPE, stdout=log,
                                            stderr=subprocess.STDOUT)
        self.server = self.wait_for_server()

    def log(self):
        with open(self.log_path, errors="replace") as log:
            return log.read()

    def wait_for_server(self):
        path = os.path.join(self.directory, "server.json")
        deadline = time.monotonic() + START_TIMEOUT_S
        while not os.path.exists(path):
            if self.process.poll() is not None:
                raise Failed(f"serving_fixture exited with status {self.process.returncode} before "
                             f"serving:\n{self.log()}")
            if time.monotonic() > deadline:
                self.process.kill()
                self.process.wait()
                raise Failed(f"serving_fixture did not serve within {START_TIMEOUT_S} s:\n"
                             f"{self.log()}")
            time.sleep(0.1)
        with open(path) as file:
            return json.load(file)

    def version(self):
        """The version served: the name of the one export directory."""
        export = os.path.join(self.directory, "model", "export")
        versions = [name for name in os.listdir(export) if name.isdigit()]
        if len(versions) != 1:
            raise Failed(f"expected one export version in {export}, found "
                         f"{sorted(os.listdir(export))}")
        return versions[0]

    def close(self):
        """Ends the fixture by closing its stdin; Failed unless it exits 0 soon."""
        self.process.stdin.close()
        try:
            status = self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise Failed(f"serving_fixture did not stop within {STOP_TIMEOUT_S} s of its stdin's "
                         f"end:\n{self.log()}")
        if status != 0:
            raise Failed(f"serving_fixture exited with status {status}:\n{self.log()}")


def run_checks(client, fixture, token, records):
    """Runs `client`'s checks against `fixture` (`records`: one taking tf.train.Example
    records); True when they pass."""
    command = [client.python, client.script, "--url", f"127.0.0.1:{fixture.server[client.port]}",
               "--model", MODEL, "--version", fixture.version(),
               "--expected", os.path.join(fixture.directory, "expected.json")]
    if token:
        command += ["--token", token]
    if fixture.server.get("ca_file"):
        command += ["--ca", fixture.server["ca_file"]]
    if records:
        command += ["--records"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"  {client.name}: failed: its checks took more than {CHECK_TIMEOUT_S} s")
        return False
    output = (result.stdout + result.stderr).strip()
    print("  " + output.replace("\n", "\n  "))
    return result.returncode == 0


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    program, triton_python, tf_python = sys.argv[1:]
    clients = []
    for client, python in ((Client("tritonclient[grpc]", "tritonclient.grpc, grpc_health.v1.health_pb2",
                                   "triton_client_check.py", "port"), triton_python),
                           (Client("tritonclient[http]", "tritonclient.http",
                                   "triton_http_client_check.py", "rest_port"), triton_python),
                           (Client("tensorflow-serving-api", "tensorflow_serving.apis.predict_pb2",
                                   "tf_serving_client_check.py", "port"), tf_python),
                           (Client("requests (TF Serving REST)", "requests", "tf_serving_rest_check.py",
                                   "rest_port"), tf_python)):
        why = client.unusable(python)
        if why:
            print(f"failed: {client.name} is missing: {why}; `make serving-clients` (part of `make test`) "
                  f"installs it")
            return 1
        clients.append(client)

    root = tempfile.mkdtemp(prefix="serving_real_clients_")
    token = "test-" + secrets.token_hex(8)
    modes = (("plain", [], ""), ("token", ["--token", token], token), ("TLS", ["--tls"], ""),
             ("records", ["--records"], ""))
    passed = True
    for mode, options, mode_token in modes:
        print(f"{mode}:")
        fixture = None
        try:
            fixture = Fixture(program, os.path.join(root, mode.lower()), options)
            for client in clients:
                passed = run_checks(client, fixture, mode_token, mode == "records") and passed
        except Failed as failure:
            print(f"  failed: {failure}")
            passed = False
        finally:
            if fixture is not None:
                try:
                    fixture.close()
                except Failed as failure:
                    print(f"  failed: {failure}")
                    passed = False
    if not passed:
        print(f"failed; the servers' directories are kept in {root}")
        return 1
    shutil.rmtree(root, ignore_errors=True)
    print("ok: " + " and ".join(client.name for client in clients) + " pass against our server")
    return 0


if __name__ == "__main__":
    sys.exit(main())
