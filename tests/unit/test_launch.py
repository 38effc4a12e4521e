"""The server's start: its listening socket, and what may happen while it loads."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess

from conftest import wait_for
from gemini_companion import companion
from gemini_companion.editor import PendingEditor
from gemini_companion.server import discovery, launch


def test_accepted_connections_send_without_waiting_for_acks() -> None:
    """asyncio turns Nagle off only on sockets whose proto says TCP; accepted ones inherit the
    listener's. With Nagle on, a body written after its headers waits for the client's delayed
    ACK (~40 ms on loopback)."""
    sock = launch.listening(launch.bind_loopback())

    async def accepted_nodelay() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_connect(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connect, sock=sock)
        client = socket.create_connection(sock.getsockname())
        try:
            return await asyncio.wait_for(seen, 30)
        finally:
            client.close()
            server.close()

    assert asyncio.run(accepted_nodelay()) != 0


def test_a_workspace_change_while_the_server_loads_leaves_it_serving(tmp_path, monkeypatch) -> None:
    """`:cd` before the server is up changes what is advertised, not whether it serves. (The worker
    took the new advertisement for a stop and closed the port: the state stayed "starting".)"""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("QWEN_HOME", str(tmp_path / "qwen"))
    for root in ("a", "b"):
        (tmp_path / root).mkdir()
    served = companion.Companion(PendingEditor())
    try:
        with served._lock:  # the worker, its server built, waits here: still loading, as it sees it
            served.start(os.getpid(), [str(tmp_path / "a")])
            served.set_workspace([str(tmp_path / "b")])
        served.wait_serving(30)
        status = served.status()
        assert (status["state"], status["workspace"]) == ("running", [str(tmp_path / "b")])
    finally:
        served.stop()


def test_a_stop_while_the_server_loads_closes_its_port(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("QWEN_HOME", str(tmp_path / "qwen"))
    stopped = companion.Companion(PendingEditor())
    with stopped._lock:
        stopped.start(os.getpid(), [str(tmp_path)])
        port = stopped.status()["port"]
        stopped.stop()

    def closed() -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) != 0

    wait_for(closed, 30, f"the worker to close port {port} once it has the lock")
    assert stopped.status()["state"] == "stopped"


def test_the_discovery_files_go_out_before_stale_ones_are_judged(tmp_path, monkeypatch) -> None:
    """A CLI waits for the discovery file; judging stale files (a dead IDE's: its PID, its port)
    took 35-40 ms for three. They are judged after ours are written, and ours are never swept."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("QWEN_HOME", str(tmp_path / "qwen"))
    gemini_dir = tmp_path / "gemini" / "ide"
    gemini_dir.mkdir(parents=True, mode=0o700)
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = gemini_dir / f"gemini-ide-server-{dead.pid}-1.json"  # its IDE is gone, nothing on port 1
    stale.write_text('{"port": 1}')
    sweep = discovery.sweep_stale
    ours_at_sweep: list[list[str]] = []

    def watched() -> list[str]:
        ours_at_sweep.append(sorted(p.name for p in gemini_dir.iterdir() if p != stale))
        return sweep()

    monkeypatch.setattr(discovery, "sweep_stale", watched)
    launched = launch.launch(os.getpid(), [str(tmp_path)])
    try:
        name = f"gemini-ide-server-{launched.ad.ide_pid}-{launched.ad.port}.json"
        assert ours_at_sweep == [[name]]
        assert launched.swept == [str(stale)] and not stale.exists()
        assert all(os.path.exists(path) for path in launched.files)
    finally:
        launched.abandon()
