"""Simulated hosts: several network namespaces on this machine, each a "host" with an address
that exists only inside the namespaces made here, joined by a switch (a bridge in a namespace
of its own) over veth links shaped with `tc ... tbf` to a named rate in each direction. What
runs in a host (`SimulatedHosts.command`) sees only its own link, as on a real machine; the
benchmarks of make bench's `hosts` group run our workers and PyTorch DDP's there.

Everything made is named after this process (est<pid>h0, est<pid>sw, ...) and removed on
exit, on an exception and on SIGTERM/SIGINT; `--cleanup` removes what a killed run left. Where
namespaces cannot be made (not root, no `ip`, no CAP_NET_ADMIN) `Unavailable` says why; so it
does where a delay is asked for and the kernel has no netem qdisc (this project's machine has
none), rather than leaving the delay out.

usage: simulated_hosts.py --check [--hosts N] [--rate-mbit R]   (set up, measure, tear down)
       simulated_hosts.py --cleanup                            (remove leftovers of killed runs)
"""

import argparse
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

# Addresses of the simulated hosts: a private /24 that no real interface here uses.
SUBNET = ipaddress.ip_network("10.231.0.0/24")
NAME_PATTERN = re.compile(r"^est(\d+)(h\d+|sw)$")


class Unavailable(Exception):
    """This machine cannot simulate hosts; the message says why."""


def run(argv, check=True):
    """Runs an `ip`/`tc` command; raises RuntimeError quoting it and its stderr on failure."""
    result = subprocess.run(argv, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` failed: {result.stderr.strip() or result.returncode}")
    return result


def _namespaces():
    """The network namespaces of this machine, by name."""
    result = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in result.stdout.splitlines() if line.strip()]


def check_available():
    """Raises Unavailable with the reason where namespaces cannot be made here."""
    if shutil.which("ip") is None or shutil.which("tc") is None:
        raise Unavailable("the `ip` and `tc` commands (Debian's iproute2) are not installed")
    if os.geteuid() != 0:
        raise Unavailable("network namespaces need root (CAP_NET_ADMIN); this process is not root")
    probe = f"est{os.getpid()}probe"
    result = run(["ip", "netns", "add", probe], check=False)
    if result.returncode != 0:
        raise Unavailable(f"`ip netns add` is refused here: {result.stderr.strip()}")
    run(["ip", "netns", "del", probe], check=False)


def program_argument_or_exit(usage):
    """For a test that runs one program across simulated hosts: that program (the only
    argument) as an absolute path. Exits 2 printing `usage` without exactly one argument, and
    77 (CTest's SKIP_RETURN_CODE) saying why where namespaces cannot be made."""
    if len(sys.argv) != 2:
        print(usage)
        sys.exit(2)
    try:
        check_available()
    except Unavailable as why:
        print(f"skipped: {why}")
        sys.exit(77)
    return os.path.abspath(sys.argv[1])


def cleanup_leftovers():
    """Removes the namespaces of runs whose process is gone; returns their names."""
    removed = []
    for name in _namespaces():
        match = NAME_PATTERN.match(name)
        if match and not os.path.exists(f"/proc/{match.group(1)}"):
            run(["ip", "netns", "del", name], check=False)
            removed.append(name)
    return removed


class SimulatedHosts:
    """`count` hosts on one switch, every link limited to `rate_mbit` Mbit/s each way.

    with SimulatedHosts(2, rate_mbit=1000) as hosts:
        server = subprocess.Popen(hosts.command(0, ["prog", "--listen", hosts.address(0)]))
    """

    def __init__(self, count, rate_mbit, delay_ms=0.0):
        if count < 2 or count > 200:
            raise ValueError(f"SimulatedHosts: {count} hosts; expected 2 to 200")
        if rate_mbit <= 0:
            raise ValueError(f"SimulatedHosts: rate {rate_mbit} Mbit/s; expected a positive rate")
        if delay_ms < 0:
            raise ValueError(f"SimulatedHosts: delay {delay_ms} ms; expected 0 or more")
        self.count = count
        self.delay_ms = delay_ms
        self.rate_mbit = rate_mbit
        self.tag = f"est{os.getpid()}"
        self.made = []  # namespaces made, removed in reverse order
        self.previous_handlers = {}

    def namespace(self, index):
        """The namespace of host `index`."""
        return f"{self.tag}h{index}"

    def address(self, index):
        """Host `index`'s address, reachable from every other host."""
        return str(SUBNET.network_address + 1 + index)

    def command(self, index, argv):
        """`argv` run inside host `index` (prefix for subprocess)."""
        return ["ip", "netns", "exec", self.namespace(index)] + list(argv)

    def cut(self, index):
        """Takes host `index`'s link down at the switch: from then on its packets are dropped,
        and no connection is reset, as when a cable or a switch port fails."""
        run(["ip", "-n", f"{self.tag}sw", "link", "set", f"port{index}", "down"])

    def __enter__(self):
        check_available()
        for signum in (signal.SIGTERM, signal.SIGINT):
            self.previous_handlers[signum] = signal.signal(signum, self._on_signal)
        try:
            self.set_up()
        except BaseException:
            self._tear_down()
            raise
        return self

    def __exit__(self, *exc):
        self._tear_down()
        return False

    def _on_signal(self, signum, frame):
        self._tear_down()
        raise KeyboardInterrupt(f"signal {signum}")

    def _add_namespace(self, name):
        run(["ip", "netns", "add", name])
        self.made.append(name)
        run(["ip", "-n", name, "link", "set", "lo", "up"])

    def _shape(self, namespace, device):
        # tbf: the rate, a burst of 1 ms at that rate (at least 64 KiB, enough for TSO), and
        # 50 ms of queue before drops, as a switch port would hold. A delay is netem's, with
        # the tbf under it; each direction gets half, so a round trip takes delay_ms.
        tc = ["ip", "netns", "exec", namespace, "tc", "qdisc", "add", "dev", device]
        parent = ["root"]
        if self.delay_ms:
            result = run(tc + ["root", "handle", "1:", "netem", "delay", f"{self.delay_ms / 2:g}ms"], check=False)
            if result.returncode != 0:
                raise Unavailable(f"a link delay needs the kernel's netem qdisc: {result.stderr.strip()}")
            parent = ["parent", "1:", "handle", "2:"]
        burst = max(64 * 1024, int(self.rate_mbit * 1e6 / 8 / 1000))
        run(tc + parent + ["tbf", "rate", f"{self.rate_mbit:g}mbit", "burst", str(burst), "latency", "50ms"])

    def set_up(self):
        """Makes the switch and the hosts, and leaves them standing: for a program that keeps them
        beyond its own life (tests/slurm/slurm_hosts.py), which then removes them itself; others
        use the object as a context manager."""
        switch = f"{self.tag}sw"
        self._add_namespace(switch)
        run(["ip", "-n", switch, "link", "add", "br0", "type", "bridge"])
        run(["ip", "-n", switch, "link", "set", "br0", "up"])
        prefix = SUBNET.prefixlen
        for index in range(self.count):
            host = self.namespace(index)
            self._add_namespace(host)
            # The veth pair is made inside the host's namespace, so no name ever appears in
            # the machine's own: one end is eth0 there, the other moves to the switch.
            run(["ip", "-n", host, "link", "add", "eth0", "type", "veth", "peer", "name", f"port{index}",
                  "netns", switch])
            run(["ip", "-n", host, "addr", "add", f"{self.address(index)}/{prefix}", "dev", "eth0"])
            run(["ip", "-n", host, "link", "set", "eth0", "up"])
            run(["ip", "-n", switch, "link", "set", f"port{index}", "master", "br0"])
            run(["ip", "-n", switch, "link", "set", f"port{index}", "up"])
            self._shape(host, "eth0")               # what the host sends
            self._shape(switch, f"port{index}")     # what the host receives

    def _tear_down(self):
        while self.made:
            run(["ip", "netns", "del", self.made.pop()], check=False)
        for signum, handler in self.previous_handlers.items():
            signal.signal(signum, handler)
        self.previous_handlers = {}


def _receive(port, seconds):
    """Accepts one connection and counts its bytes for `seconds` after the first arrives."""
    with socket.create_server(("0.0.0.0", port)) as server:
        server.settimeout(30)
        connection, _ = server.accept()
        with connection:
            connection.settimeout(30)
            received = 0
            start = None
            while True:
                chunk = connection.recv(1 << 20)
                if not chunk:
                    break
                if start is None:
                    start = time.monotonic()
                received += len(chunk)
                if time.monotonic() - start >= seconds:
                    break
            elapsed = time.monotonic() - start if start is not None else 0.0
    print(json.dumps({"bytes": received, "seconds": elapsed}))


def _send(address, port):
    """Sends zeros to address:port until the receiver closes."""
    payload = bytes(1 << 20)
    deadline = time.monotonic() + 30
    while True:
        try:
            connection = socket.create_connection((address, port), timeout=30)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    with connection:
        try:
            while True:
                connection.sendall(payload)
        except OSError:
            pass  # the receiver has what it wanted and closed


def check(count, rate_mbit, seconds=2.0):
    """Sets up `count` hosts, measures a TCP stream from host 1 to host 0 and tears down;
    returns {"rate_mbit", "measured_mbit", "namespaces_left"}."""
    port = 47321
    with SimulatedHosts(count, rate_mbit) as hosts:
        me = os.path.abspath(__file__)
        receiver = subprocess.Popen(hosts.command(0, [sys.executable, me, "--receive", str(port), str(seconds)]),
                                    stdout=subprocess.PIPE, text=True)
        sender = subprocess.Popen(hosts.command(1, [sys.executable, me, "--send", hosts.address(0), str(port)]))
        out, _ = receiver.communicate(timeout=60)
        sender.wait(timeout=60)
        if receiver.returncode != 0:
            raise RuntimeError(f"the receiver in {hosts.namespace(0)} failed ({receiver.returncode})")
        tag = hosts.tag
    measured = json.loads(out)
    left = [name for name in _namespaces() if name.startswith(tag)]
    return {"rate_mbit": rate_mbit,
            "measured_mbit": measured["bytes"] * 8 / 1e6 / max(measured["seconds"], 1e-9),
            "namespaces_left": left}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="set up hosts, measure one link, tear down")
    parser.add_argument("--cleanup", action="store_true", help="remove what killed runs left")
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--rate-mbit", type=float, default=200)
    parser.add_argument("--receive", nargs=2, metavar=("PORT", "SECONDS"), help=argparse.SUPPRESS)
    parser.add_argument("--send", nargs=2, metavar=("ADDRESS", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.receive:
        _receive(int(args.receive[0]), float(args.receive[1]))
        return 0
    if args.send:
        _send(args.send[0], int(args.send[1]))
        return 0
    if args.cleanup:
        print(json.dumps({"removed": cleanup_leftovers()}))
        return 0
    if args.check:
        try:
            print(json.dumps(check(args.hosts, args.rate_mbit)))
        except Unavailable as why:
            print(f"simulated hosts unavailable: {why}")
            return 77
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
