"""A real standalone Milvus server for the tests, started from PyPI's `milvus` wheel (no container).

The wheel (`milvus==2.3.5`, the dev extra) carries the server binary and its libraries, lzma-packed.
`MilvusServer` unpacks them once into a cache folder, writes a config with every port free and
every component on 127.0.0.1, and runs `milvus run standalone` with its data in a temporary folder.

Why the package's own launcher is not used (each of these made its server die or collide here):
- the embedded etcd always listens on 2379 (clients) and 2380 (peers) unless given a config file
  of its own, whatever `etcd.endpoints` says: a second server on the machine (another session's
  test run) then reaches the first one's etcd, registers the same coordinators under the same
  root path, and the exclusive sessions kill one another. Here etcd gets its own file
  (`ETCD_CONFIG_PATH`) with free ports, and a root path of its own;
- the components advertise "the first unicastable address" (eth0) to one another; here they
  advertise 127.0.0.1, so nothing leaves loopback and a machine without eth0 works too;
- the server's log (several KB a second) must go to files: a pipe nobody reads fills in about a
  minute and blocks the process, its etcd lease keep-alives stop, and after the 30 s session TTL
  it takes itself down ("lost lease"). See docs/vectordb.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import lzma
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT_PASSWORD = "Milvus"  # the server's built-in root password (authorization enabled)
PORT_KEYS = (
    "etcd_port",
    "root_coord_port",
    "proxy_port",
    "proxy_internal_port",
    "query_coord_port",
    "query_node_port",
    "index_coord_port",
    "index_node_port",
    "data_coord_port",
    "data_node_port",
)
COMPONENTS = ("rootCoord", "proxy", "queryCoord", "queryNode", "indexNode", "dataCoord", "dataNode")


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports that were free a moment ago."""
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the process that started it ends, however it
    ends (a test run killed outright leaves no server behind). Start servers from the main
    thread: the signal follows the thread that started the child."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


def unpack_binaries(cache: Path) -> Path:
    """The folder with the wheel's `milvus` binary and libraries, unpacked once (locked, so that
    two test sessions do not write the same files at once)."""
    import milvus

    packed = Path(milvus.__file__).parent / "data" / "bin"
    target = cache / f"milvus-{milvus.__version__}" / "bin"
    target.mkdir(parents=True, exist_ok=True)
    with (target.parent / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for source in sorted(packed.glob("*.lzma")):
            out = target / source.name.removesuffix(".lzma")
            stamp = out.with_name(out.name + ".size")
            size = str(source.stat().st_size)
            if out.is_file() and stamp.is_file() and stamp.read_text() == size:
                continue
            tmp = out.with_name(out.name + ".part")
            with lzma.open(source) as raw, tmp.open("wb") as dest:
                while chunk := raw.read(1 << 20):
                    dest.write(chunk)
            tmp.chmod(0o755)
            tmp.replace(out)
            stamp.write_text(size)
    return target


def render_config(template: str, values: dict[str, object]) -> str:
    """The package's config template with its `{{ name(type): default }}` slots filled, every
    component advertising 127.0.0.1, and authorization as asked."""

    def fill(match: re.Match[str]) -> str:
        key = match.group(1).split(":")[0].split("(")[0].strip()
        value = values.get(key)
        if value is None:
            default = match.group(1).split(":", 1)
            return default[1].strip() if len(default) > 1 else ""
        return str(value).lower() if isinstance(value, bool) else str(value)

    text = re.sub(r"\{\{(.*?)\}\}", fill, template)
    lines, section = [], ""
    for line in text.splitlines():
        top = re.match(r"^([A-Za-z]\w*):", line)
        if top:
            section = top.group(1)
        if section in COMPONENTS and re.match(r"^  ip:", line):
            line = "  ip: 127.0.0.1"
        lines.append(line)
    return "\n".join(lines) + "\n"


@dataclass
class MilvusServer:
    """One standalone Milvus server process on loopback, its data and logs under `base`."""

    base: Path
    cache: Path
    authorization: bool = True
    ports: dict[str, int] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def port(self) -> int:
        return self.ports["proxy_port"]

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def logs(self) -> Path:
        return self.base / "logs"

    def start(self, deadline_s: float = 180.0) -> None:
        """Start the server and wait until it answers a client; RuntimeError with the log's tail
        when it exits or is not ready in `deadline_s`."""
        import milvus

        bin_dir = unpack_binaries(self.cache)
        if not self.ports:  # a restart keeps the ports: clients reconnect to the same address
            names = [*PORT_KEYS, "metrics_port", "etcd_peer_port"]
            self.ports = dict(zip(names, free_ports(len(names)), strict=True))
        for sub in ("configs", "logs", "data", "run"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        data = self.base / "data"
        values: dict[str, object] = {k: self.ports[k] for k in PORT_KEYS}
        values |= {
            "etcd_log_path": self.logs / "etcd.log",
            "system_log_path": self.logs,
            "etcd_data_dir": data / "etcd.data",
            "local_storage_dir": data,
            "rocksmq_data_dir": data / "rocksmq",
            "authorization_enabled": self.authorization,
        }
        template = (Path(milvus.__file__).parent / "data" / "config.yaml.template").read_text()
        (self.base / "configs" / "milvus.yaml").write_text(render_config(template, values))
        glog = Path(milvus.__file__).parent / "data" / "glog.conf"
        (self.base / "configs" / "glog.conf").write_bytes(glog.read_bytes())
        etcd, peer = self.ports["etcd_port"], self.ports["etcd_peer_port"]
        etcd_config = self.base / "configs" / "embedEtcd.yaml"
        etcd_config.write_text(
            f"name: ingestflow-test\n"
            f"listen-client-urls: http://127.0.0.1:{etcd}\n"
            f"advertise-client-urls: http://127.0.0.1:{etcd}\n"
            f"listen-peer-urls: http://127.0.0.1:{peer}\n"
            f"initial-advertise-peer-urls: http://127.0.0.1:{peer}\n"
            f"initial-cluster: ingestflow-test=http://127.0.0.1:{peer}\n"
        )
        env = {
            **os.environ,
            "DEPLOY_MODE": "STANDALONE",
            "METRICS_PORT": str(self.ports["metrics_port"]),
            "MILVUS_RUN_DIR": str(self.base / "run"),
            "ETCD_CONFIG_PATH": str(etcd_config),
            "LD_LIBRARY_PATH": ":".join(
                p for p in (str(bin_dir), os.environ.get("LD_LIBRARY_PATH", "")) if p
            ),
        }
        with (
            (self.logs / "stdout.log").open("ab") as out,
            (self.logs / "stderr.log").open("ab") as err,
        ):
            self.process = subprocess.Popen(
                [str(bin_dir / "milvus"), "run", "standalone"],
                cwd=self.base,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,  # its own process group: stop() ends all of it
                preexec_fn=_die_with_parent,
            )
        self._wait_ready(time.monotonic() + deadline_s)

    def _wait_ready(self, deadline: float) -> None:
        health = f"http://127.0.0.1:{self.ports['metrics_port']}/healthz"
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the Milvus server exited with {self.process.returncode} while starting; "
                    f"log tail:\n{self.log_tail()}"
                )
            with contextlib.suppress(OSError), urllib.request.urlopen(health, timeout=5) as resp:
                if b"OK" in resp.read() and self._answers():
                    return
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the Milvus server was not ready in time; log tail:\n{self.log_tail()}")

    def _answers(self) -> bool:
        """True once the proxy serves a client (healthz turns OK a moment before it does)."""
        from pymilvus import MilvusClient

        try:
            client = MilvusClient(uri=self.uri, token=f"root:{ROOT_PASSWORD}", timeout=10)
            try:
                client.list_collections()
            finally:
                client.close()
        except Exception:
            return False
        return True

    def stop(self, grace_s: float = 3.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL to its whole process group)."""
        proc, self.process = self.process, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def kill(self) -> None:
        """End the server at once, as a crash would (SIGKILL, no shutdown)."""
        self.stop(grace_s=0)

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the server's own log and of etcd's."""
        out = []
        for name in ("stdout.log", "stderr.log", "etcd.log"):
            path = self.logs / name
            if path.is_file():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {name}\n" + "\n".join(t[:300] for t in text))
        return "\n".join(out)
