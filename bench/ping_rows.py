# SPDX-License-Identifier: ISC
"""The rows of the ping benchmark: what runs the vCPUs in each.

A row is `POLICY[:POOL_PARAMS][@PINGPONG_PARAMS[@BG_PARAMS]]`, parameters
comma-separated:

  credit:tslice_ms=5     vcpusched, pool policy credit with a 5 ms slice
  credit@@cap=25         vcpusched credit, cap=25 on each background VM
  credit2                vcpusched credit2, defaults
  credit2@@class=background  ... background VMs in the background class
  kernel                 the stock kernel scheduler, no vcpusched
  kernel@@nice=19        ... background VMs' vCPU threads at nice 19
  kernel@@sched=idle     ... background vCPU threads SCHED_IDLE
  kernel@@shares=2       ... background domains' cgroup CPU weight (libvirt cpu_shares)
  kernel@sched=fifo:1    ... ping and pong vCPUs SCHED_FIFO 1 (libvirt <vcpusched>)

vcpusched rows take the policy's pool and domain parameters (checked by the
daemon; `class` is one of them); a domain parameter a row does not give is
set to its default, so nothing carries over from the row before. Kernel rows
take nice=-20..19, sched=other|batch|idle|fifo:P|rr:P and shares=2..262144."""

import argparse
import re

KERNEL = "kernel"
# Policies of vcpuschedd the benchmark can run as a row; `table` needs a
# slot table naming the domains, so it is not offered here.
POLICIES = ("credit", "credit2", "rr")
KERNEL_KEYS = ("nice", "sched", "shares")
SCHED_KNOB = re.compile(r"^(other|batch|idle|(fifo|rr):([1-9][0-9]?))$")


class Row:
    def __init__(self, spec):
        self.spec = spec
        rest, _, doms = spec.partition("@")
        pp, _, bg = doms.partition("@")
        name, _, pool = rest.partition(":")
        if "@" in bg:
            raise argparse.ArgumentTypeError(f"{spec!r}: at most two '@' parts")
        if name != KERNEL and name not in POLICIES:
            raise argparse.ArgumentTypeError(
                f"{spec!r}: unknown scheduler {name!r} ({', '.join((KERNEL,) + POLICIES)})")
        self.sched = name
        self.pool = self._kv(pool)
        self.pp = dict(kv.split("=", 1) for kv in self._kv(pp))
        self.bg = dict(kv.split("=", 1) for kv in self._kv(bg))
        if name == KERNEL:
            if self.pool:
                raise argparse.ArgumentTypeError(f"{spec!r}: the kernel has no pool parameters")
            for where in (self.pp, self.bg):
                for k, v in where.items():
                    self._check_knob(k, v)
            if self.bg.get("sched", "").startswith(("fifo", "rr")):
                raise argparse.ArgumentTypeError(
                    f"{spec!r}: real-time background VMs would starve ping and pong")

    def _kv(self, text):
        out = [kv for kv in text.split(",") if kv]
        for kv in out:
            if not re.match(r"^[a-z][a-z0-9_]*=[A-Za-z0-9_.:-]+$", kv):
                raise argparse.ArgumentTypeError(f"{self.spec!r}: bad parameter {kv!r} "
                                                 "(key=value)")
        return out

    def _check_knob(self, k, v):
        ok = {"nice": lambda x: re.match(r"^-?\d+$", x) and -20 <= int(x) <= 19,
              "shares": lambda x: x.isdigit() and 2 <= int(x) <= 262144,
              "sched": lambda x: SCHED_KNOB.match(x)}.get(k)
        if ok is None or not ok(v):
            raise argparse.ArgumentTypeError(
                f"{self.spec!r}: {k}={v}: kernel rows take nice=-20..19, "
                "sched=other|batch|idle|fifo:P|rr:P, shares=2..262144")

    @property
    def vcpusched(self):
        return self.sched != KERNEL

    def pp_vcpusched(self):
        """libvirt's <vcpusched> for ping and pong, (policy, prio) or None:
        a real-time class is given at domain start, as libvirt does."""
        m = SCHED_KNOB.match(self.pp.get("sched", "")) if not self.vcpusched else None
        if m and m.group(2):
            return (m.group(2), int(m.group(3)))
        return None

    def bg_only(self):
        """The row acts on background VMs: with none it is its base row."""
        return bool(self.bg)

    def base(self):
        """The spec without background parameters."""
        return self.spec.split("@")[0] + (f"@{','.join(f'{k}={v}' for k, v in self.pp.items())}"
                                           if self.pp else "")

    def label(self):
        parts = [self.sched]
        if self.pool:
            parts.append(" ".join(self.pool))
        names = {"nice": "nice {}", "sched": "{}", "shares": "cpu_shares {}"}
        for who, d in (("ping+pong", self.pp), ("bg", self.bg)):
            if d:
                if self.vcpusched:
                    parts.append(f"{who} " + " ".join(f"{k}={v}" for k, v in d.items()))
                else:
                    parts.append(f"{who} " + " ".join(
                        names[k].format(f"SCHED_{v.split(':')[0].upper()}"
                                        + (f" {v.split(':')[1]}" if ":" in v else "")
                                        if k == "sched" else v) for k, v in d.items()))
        return ", ".join(parts)


def parse_rows(text):
    rows = [Row(s) for s in text.split()]
    if len({r.spec for r in rows}) != len(rows):
        raise argparse.ArgumentTypeError("a row is given twice")
    return rows
