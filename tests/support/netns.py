"""Test hosts made of network namespaces, for the tests that run jobs across hosts.

A switch namespace holds a bridge; each host is a namespace joined to it by a veth pair whose
inside end is named eth0 on every host (so GLOO_SOCKET_IFNAME is one value), with the given
addresses (198.18.0.0/15 or IPv6 ULA only). `etc_hosts`, when given, is written to
/etc/netns/NS/hosts, which `ip netns exec` binds over /etc/hosts; the machine's own files are never
touched. Namespaces are named PREFIX-sw and PREFIX-NAME, PREFIX ending in the test's process id, so
`remove_stale(stem)` can tell a killed earlier run's namespaces from a live run's.
"""
import pathlib
import re
import shutil
import subprocess

import processes


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True)


def remove_stale(stem):
    """Namespaces (and /etc/netns files) named STEM<pid>-... of runs whose process is gone."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for name, pid in re.findall(rf"^({re.escape(stem)}(\d+)-[\w-]+)\b", listed, re.M):
        if processes.owner_gone(pid):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
            shutil.rmtree(pathlib.Path("/etc/netns") / name, ignore_errors=True)


class network:
    """hosts: [(name, [address/prefix, ...])]. Namespaces PREFIX-sw and PREFIX-NAME."""

    def __init__(self, prefix, hosts, etc_hosts=None):
        self.prefix = prefix
        self.switch = f"{prefix}-sw"
        self.hosts = hosts
        self.namespaces = [f"{prefix}-{name}" for name, _ in hosts]
        self.etc_hosts = etc_hosts

    def create(self):
        try:
            ip("netns", "add", self.switch)
            ip("-n", self.switch, "link", "set", "lo", "up")
            ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            ip("-n", self.switch, "link", "set", "br0", "up")
            for i, (ns, (_, addresses)) in enumerate(zip(self.namespaces, self.hosts)):
                ip("netns", "add", ns)
                ip("-n", self.switch, "link", "add", f"p{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
                ip("-n", self.switch, "link", "set", f"p{i}", "master", "br0", "up")
                ip("-n", ns, "link", "set", "lo", "up")
                for a in addresses:
                    ip("-n", ns, "addr", "add", a, "dev", "eth0", *(["nodad"] if ":" in a else []))
                ip("-n", ns, "link", "set", "eth0", "up")
                if self.etc_hosts is not None:
                    etc = pathlib.Path("/etc/netns") / ns
                    etc.mkdir(parents=True, exist_ok=True)
                    (etc / "hosts").write_text(self.etc_hosts)
        except BaseException:
            self.remove()
            raise
        return self

    def remove(self):
        for ns in self.namespaces + [self.switch]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            shutil.rmtree(pathlib.Path("/etc/netns") / ns, ignore_errors=True)
