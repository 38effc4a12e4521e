"""launch.launch with a kept record's port and tokens (server/kept.py): served again when free and
well formed; a taken port gets a new server (and says which), anything malformed is not used."""

from __future__ import annotations

import socket

from gemini_companion.server import discovery, launch

TOKENS = {name: f"{name[0]}" * 64 for name in ("token", "qwen_token", "tools_token", "hooks_token")}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launched(monkeypatch, reuse: object) -> launch.Launch:
    monkeypatch.setattr(discovery, "write_all", lambda ad: ([], []))
    monkeypatch.setattr(discovery, "sweep_stale", lambda: [])
    return launch.launch(1, [], reuse)


def test_a_free_port_is_served_again_with_its_tokens(monkeypatch):
    port = free_port()
    got = launched(monkeypatch, {"port": port, **TOKENS})
    try:
        assert got.ad.port == port and got.taken is None
        assert (got.ad.token, got.ad.tools_token, got.ad.hooks_token) == ("t" * 64, "t" * 64, "h" * 64)
    finally:
        got.abandon()


def test_a_taken_port_gets_another_and_new_tokens(monkeypatch):
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        got = launched(monkeypatch, {"port": port, **TOKENS})
        try:
            assert got.ad.port != port and got.taken == port and got.ad.tools_token != "t" * 64
        finally:
            got.abandon()


def test_a_malformed_record_is_not_used(monkeypatch):
    port = free_port()
    for reuse in ({"port": port, **TOKENS, "token": "$(touch x)"}, {"port": 80, **TOKENS}, {"port": True}, "x"):
        got = launched(monkeypatch, reuse)
        try:
            assert got.ad.port != 80 and got.taken is None and got.ad.token != "t" * 64
        finally:
            got.abandon()
