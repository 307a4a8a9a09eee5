#!/usr/bin/env python3
"""The Kubernetes manifests of examples/kubernetes/, checked without a cluster.

Each manifest must parse and carry what its operator reads (the container name it injects
variables into, the named port, the replica types), run est-train on one shared model_dir, and
the environment the operator makes for each replica (Kubeflow training operator v1: TFJob's
TF_CONFIG with headless service names, PyTorchJob's MASTER_ADDR, MASTER_PORT, WORLD_SIZE and
RANK) must resolve, through print_cluster (ResolveCluster), to that replica's place.

  kubernetes_manifests_test.py EXAMPLES_DIR PRINT_CLUSTER
"""

import json
import os
import subprocess
import sys

import yaml


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def load(examples, name):
    with open(os.path.join(examples, name)) as file:
        manifest = yaml.safe_load(file)
    check(manifest.get("apiVersion") == "kubeflow.org/v1", f"{name}: apiVersion is not kubeflow.org/v1")
    return manifest


def container(template, name, manifest):
    """The container the operator injects its variables into: it must be called `name`."""
    for candidate in template["spec"]["containers"]:
        if candidate["name"] == name:
            return candidate
    fail(f"{manifest}: no container named '{name}', where the operator sets its variables")


def named_port(entry, name, manifest):
    for port in entry.get("ports", []):
        if port.get("name") == name:
            return port["containerPort"]
    fail(f"{manifest}: container '{entry['name']}' has no port named '{name}', which the operator reads")


def flag(command, name):
    """The value of --name=value in `command`, or None."""
    prefix = f"--{name}="
    values = [part[len(prefix):] for part in command if part.startswith(prefix)]
    return values[-1] if values else None


def check_replica(template, container_name, port_name, strategy, manifest):
    """est-train with `strategy`, model_dir on a mounted persistent volume; returns (port, model_dir, claim)."""
    entry = container(template, container_name, manifest)
    command = entry["command"]
    check(command[0] == "est-train", f"{manifest}: the command is {command[0]}, expected est-train")
    check(flag(command, "strategy") == strategy, f"{manifest}: --strategy is {flag(command, 'strategy')}")
    model_dir = flag(command, "model-dir")
    check(model_dir is not None, f"{manifest}: no --model-dir")
    mounts = [m for m in entry.get("volumeMounts", []) if model_dir.startswith(m["mountPath"].rstrip("/") + "/")]
    check(len(mounts) == 1, f"{manifest}: --model-dir={model_dir} is on no mounted volume")
    volumes = {v["name"]: v for v in template["spec"].get("volumes", [])}
    claim = volumes.get(mounts[0]["name"], {}).get("persistentVolumeClaim", {}).get("claimName")
    check(claim, f"{manifest}: the volume of {model_dir} is not a persistent volume claim")
    return named_port(entry, port_name, manifest), model_dir, claim


def resolve(print_cluster, variables):
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **variables}
    run = subprocess.run([print_cluster], env=environment, capture_output=True, text=True, timeout=30)
    check(run.returncode == 0, f"print_cluster refused {variables}: {run.stderr.strip()}")
    return json.loads(run.stdout)


def tfjob_environments(job):
    """(type, index, variables) of every replica, as the training operator makes TF_CONFIG: the
    training replicas at <job>-<type>-<index>.<namespace>.svc:<tfjob-port>, the evaluator
    outside the cluster, environment "cloud"."""
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    specs = job["spec"]["tfReplicaSpecs"]
    cluster = {}
    for replica_type, spec in specs.items():
        if replica_type == "Evaluator":
            continue
        task = replica_type.lower()
        port = named_port(container(spec["template"], "tensorflow", name), "tfjob-port", name)
        cluster[task] = [f"{name}-{task}-{i}.{namespace}.svc:{port}" for i in range(spec["replicas"])]
    for replica_type, spec in specs.items():
        for index in range(spec["replicas"]):
            tf_config = {"cluster": cluster, "task": {"type": replica_type.lower(), "index": index},
                         "environment": "cloud"}
            yield replica_type.lower(), index, {"TF_CONFIG": json.dumps(tf_config)}


def pytorchjob_environments(job):
    """(type, index, variables) of every replica, as the training operator sets them: MASTER_ADDR
    <job>-master-0, MASTER_PORT the master's pytorchjob-port, WORLD_SIZE every replica, RANK the
    index (master) or index + 1 (workers)."""
    name = job["metadata"]["name"]
    specs = job["spec"]["pytorchReplicaSpecs"]
    port = named_port(container(specs["Master"]["template"], "pytorch", name), "pytorchjob-port", name)
    world_size = sum(spec["replicas"] for spec in specs.values())
    for replica_type, spec in specs.items():
        for index in range(spec["replicas"]):
            rank = index if replica_type == "Master" else index + 1
            yield replica_type.lower(), index, {"MASTER_ADDR": f"{name}-master-0", "MASTER_PORT": str(port),
                                                "WORLD_SIZE": str(world_size), "RANK": str(rank)}


def check_shared_model_dir(specs, container_name, port_name, strategy, manifest):
    """Every replica runs est-train with `strategy` on the same model_dir and claim."""
    places = {check_replica(spec["template"], container_name, port_name, strategy, manifest)[1:]
              for spec in specs.values()}
    check(len(places) == 1, f"{manifest}: the replicas do not share one model_dir on one claim: {places}")


def check_tfjob(examples, print_cluster):
    job = load(examples, "tfjob.yaml")
    check(job["kind"] == "TFJob", "tfjob.yaml: not a TFJob")
    specs = job["spec"]["tfReplicaSpecs"]
    check(set(specs) == {"Chief", "Worker", "Evaluator"}, f"tfjob.yaml: replica types {sorted(specs)}")
    check_shared_model_dir(specs, "tensorflow", "tfjob-port", "multi_worker", "tfjob.yaml")
    chief = "fashion-mnist-chief-0.training.svc:2222"
    places = 0
    for task, index, variables in tfjob_environments(job):
        place = resolve(print_cluster, variables)
        check(place["source"] == "TF_CONFIG" and place["job"] == task and place["task_id"] == index,
              f"tfjob.yaml: {task} {index} resolved as {place}")
        check(place["chief_address"] == chief, f"tfjob.yaml: {task} {index}'s chief is {place['chief_address']}")
        check(place["num_worker_replicas"] == 3, f"tfjob.yaml: {task} {index} sees {place['num_worker_replicas']}")
        expected_rank = {"chief": 0, "worker": index + 1, "evaluator": -1}[task]
        check(place["rank"] == expected_rank, f"tfjob.yaml: {task} {index} has rank {place['rank']}")
        check(place["is_chief"] == (task == "chief"), f"tfjob.yaml: {task} {index} is_chief {place['is_chief']}")
        if task != "evaluator":
            check(place["task_address"] == f"fashion-mnist-{task}-{index}.training.svc:2222",
                  f"tfjob.yaml: {task} {index} is at {place['task_address']}")
        places += 1
    check(places == 4, f"tfjob.yaml: {places} replicas")


def check_tfjob_parameter_server(examples, print_cluster):
    job = load(examples, "tfjob-parameter-server.yaml")
    specs = job["spec"]["tfReplicaSpecs"]
    check(set(specs) == {"Chief", "Worker", "PS", "Evaluator"}, f"tfjob-parameter-server.yaml: {sorted(specs)}")
    check_shared_model_dir(specs, "tensorflow", "tfjob-port", "parameter_server", "tfjob-parameter-server.yaml")
    for task, index, variables in tfjob_environments(job):
        place = resolve(print_cluster, variables)
        check(place["job"] == task and place["task_id"] == index, f"ps job: {task} {index} resolved as {place}")
        check(place["cluster"].get("ps") == ["fashion-mnist-ps-ps-0.training.svc:2222"],
              f"ps job: {task} {index} sees ps tasks {place['cluster'].get('ps')}")
        check(place["rank"] == {"chief": 0, "worker": index + 1, "ps": -1, "evaluator": -1}[task],
              f"ps job: {task} {index} has rank {place['rank']}")


def check_pytorchjob(examples, print_cluster):
    job = load(examples, "pytorchjob.yaml")
    check(job["kind"] == "PyTorchJob", "pytorchjob.yaml: not a PyTorchJob")
    specs = job["spec"]["pytorchReplicaSpecs"]
    check(set(specs) == {"Master", "Worker"}, f"pytorchjob.yaml: replica types {sorted(specs)}")
    check_shared_model_dir(specs, "pytorch", "pytorchjob-port", "multi_worker", "pytorchjob.yaml")
    ranks = []
    for task, index, variables in pytorchjob_environments(job):
        place = resolve(print_cluster, variables)
        check(place["source"] == "torchrun" and place["job"] == "worker", f"pytorchjob.yaml: {place}")
        check(place["chief_address"] == "fashion-mnist-torch-master-0:23456",
              f"pytorchjob.yaml: the chief is {place['chief_address']}")
        check(place["num_worker_replicas"] == 4, f"pytorchjob.yaml: {place['num_worker_replicas']} replicas")
        check(place["is_chief"] == (task == "master"), f"pytorchjob.yaml: {task} {index} is_chief {place['is_chief']}")
        ranks.append(place["rank"])
    check(sorted(ranks) == [0, 1, 2, 3], f"pytorchjob.yaml: ranks {ranks}")


def check_dockerfile(examples):
    with open(os.path.join(examples, "Dockerfile")) as file:
        text = file.read()
    check("FROM debian:12" in text, "Dockerfile: not on Debian 12")
    check("cmake/install_deps.sh" in text, "Dockerfile: does not install through cmake/install_deps.sh")
    check("build/bin/est-train" in text, "Dockerfile: does not install est-train")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    examples, print_cluster = sys.argv[1], sys.argv[2]
    check_tfjob(examples, print_cluster)
    check_tfjob_parameter_server(examples, print_cluster)
    check_pytorchjob(examples, print_cluster)
    check_dockerfile(examples)
    print("ok: tfjob.yaml, tfjob-parameter-server.yaml, pytorchjob.yaml and the Dockerfile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
