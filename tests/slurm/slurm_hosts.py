"""The simulated hosts of a private Slurm of several nodes (local_slurm.sh start DIR NODES):
apps/bench/simulated_hosts.py's hosts on their switch, left standing when this program exits,
and one more link from this machine's own network namespace to the switch, so that slurmctld
and the commands run here reach every host and every host reaches them.

Each Slurm gets a /24 of its own (10.232.X.0/24, this machine at .254, host i at .i+1), so that
several run side by side. The names of what is made are written to DIR/hosts.made before it
is made: `down DIR` removes it all, also after a crash halfway through `up`, and again safely.

usage: slurm_hosts.py up DIR COUNT   prints this machine's address on the switch, then one line
                                     "NAMESPACE ADDRESS" per host; exits 77 saying why where
                                     namespaces cannot be made here
       slurm_hosts.py down DIR
"""

import fcntl
import ipaddress
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "bench"))
import simulated_hosts  # noqa: E402

RATE_MBIT = 1000  # a gigabit link per host
SUBNETS = ipaddress.ip_network("10.232.0.0/16")


class SlurmHosts(simulated_hosts.SimulatedHosts):
    """simulated_hosts' hosts with addresses in `subnet` and names beginning with `tag`."""

    def __init__(self, count, tag, subnet):
        super().__init__(count, rate_mbit=RATE_MBIT)
        # Not "est<pid>": simulated_hosts.cleanup_leftovers removes those once <pid> has exited,
        # as this program does while the hosts are still in use.
        self.tag = tag
        self.subnet = subnet

    def address(self, index):
        return str(self.subnet.network_address + 1 + index)

    def controller_address(self):
        return str(self.subnet.network_address + 254)


def networks_in_use():
    """The networks of this machine's own addresses."""
    out = simulated_hosts.run(["ip", "-o", "-4", "addr", "show"]).stdout
    return [ipaddress.ip_interface(line.split()[3]).network for line in out.splitlines() if len(line.split()) > 3]


def up(directory, count):
    try:
        simulated_hosts.check_available()
    except simulated_hosts.Unavailable as why:
        print(f"skipped: {why}")
        return 77
    tag = f"ests{os.getpid()}"
    link = f"{tag}c"  # this machine's end of the link to the switch
    with open(os.path.join(directory, "hosts.made"), "w") as made:
        made.write(f"{tag} {link}\n")
    with open(os.path.abspath(__file__)) as lock:  # held while a subnet is picked and claimed
        fcntl.flock(lock, fcntl.LOCK_EX)
        used = networks_in_use()
        free = [s for s in SUBNETS.subnets(new_prefix=24) if not any(s.overlaps(n) for n in used)]
        if not free:
            raise RuntimeError(f"every /24 of {SUBNETS} is in use on this machine")
        hosts = SlurmHosts(count, tag, free[0])
        hosts.set_up()
        switch = f"{tag}sw"
        simulated_hosts.run(["ip", "link", "add", link, "type", "veth", "peer", "name", "controller", "netns", switch])
        simulated_hosts.run(["ip", "-n", switch, "link", "set", "controller", "master", "br0"])
        simulated_hosts.run(["ip", "-n", switch, "link", "set", "controller", "up"])
        simulated_hosts.run(["ip", "addr", "add", f"{hosts.controller_address()}/24", "dev", link])
        simulated_hosts.run(["ip", "link", "set", link, "up"])
    print(hosts.controller_address())
    for index in range(count):
        print(hosts.namespace(index), hosts.address(index))
    return 0


def down(directory):
    """Removes what DIR/hosts.made names; the namespaces' veth ends and bridge go with them."""
    record = os.path.join(directory, "hosts.made")
    if not os.path.exists(record):
        return 0
    with open(record) as made:
        tag, link = made.read().split()
    simulated_hosts.run(["ip", "link", "del", link], check=False)
    for name in simulated_hosts._namespaces():
        if name == f"{tag}sw" or (name.startswith(f"{tag}h") and name[len(tag) + 1:].isdigit()):
            simulated_hosts.run(["ip", "netns", "del", name], check=False)
    os.remove(record)
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "up" and sys.argv[3].isdigit():
        return up(sys.argv[2], int(sys.argv[3]))
    if len(sys.argv) == 3 and sys.argv[1] == "down":
        return down(sys.argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
