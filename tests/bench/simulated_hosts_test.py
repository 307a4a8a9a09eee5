"""simulated_hosts.py makes hosts whose links carry what their tbf rate allows and no more,
and leaves no namespace behind. Exits 77 (skipped) where namespaces cannot be made here."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "bench"))
import simulated_hosts  # noqa: E402


# The round trip of a TCP connect (SYN, SYN-ACK) to a closed port of the given address, in s.
PING = """
import socket, sys, time
start = time.monotonic()
try:
    socket.create_connection((sys.argv[1], 9), timeout=5).close()
except ConnectionRefusedError:
    pass
print(time.monotonic() - start)
"""


def main():
    try:
        simulated_hosts.check_available()
    except simulated_hosts.Unavailable as why:
        print(f"skipped: {why}")
        return 77
    failures = []
    for hosts, rate in ((2, 200.0), (3, 50.0)):
        result = simulated_hosts.check(hosts, rate)
        print(result)
        # tbf never lets more than its rate through (its 64 KiB burst is nothing over 2 s);
        # TCP over the shaped link gets most of it, whatever else the machine does.
        if not 0.5 * rate <= result["measured_mbit"] <= 1.05 * rate:
            failures.append(f"{hosts} hosts at {rate} Mbit/s: a TCP stream got {result['measured_mbit']:.1f} Mbit/s")
        if result["namespaces_left"]:
            failures.append(f"namespaces left behind: {result['namespaces_left']}")
    # A delay is applied (netem) or refused naming netem; never silently left out.
    try:
        with simulated_hosts.SimulatedHosts(2, 100, delay_ms=4) as hosts:
            ping = simulated_hosts.run(hosts.command(1, [sys.executable, "-c", PING, hosts.address(0)]))
            print("round trip with a 4 ms delay:", ping.stdout.strip())
            if float(ping.stdout) < 3.5e-3:
                failures.append(f"a 4 ms delay gave a {float(ping.stdout) * 1e3:.2f} ms round trip")
    except simulated_hosts.Unavailable as why:
        print("delay refused:", why)
        if "netem" not in str(why):
            failures.append(f"a delay was refused for another reason than netem: {why}")
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
