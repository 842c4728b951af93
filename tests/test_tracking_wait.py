"""The end-of-run wait on tracking (issue 20, point 5): `Tracker.close` waits
while tracking makes progress, reports it, gives up only after a stall
interval without any, and a Ctrl-C there stops waiting with a message naming
`schedlab track`. Real stores: a SQLite file, and an HTTP server on
127.0.0.1 that answers /health and then never answers MLflow's API (a hung
tracking server). Each test runs the in-process `Tracker` and the
`TrackingProcess` that runs use (the same tracker, in a child process)."""

from __future__ import annotations

import http.server
import os
import sqlite3
import threading
import time

import pytest

from schedlab.platform.execution.runner import Interrupted, _wait_for_tracking
from schedlab.platform.storage.store import ResultStore
from schedlab.platform.tracking.process import TrackingProcess
from schedlab.platform.tracking.tracker import HTTP_ENV_DEFAULTS, Tracker, TrackProgress, TrackReport
from tests.test_hardening_tracking import assert_mirrors, make_results

STALL = 2.0  # seconds without progress before close() gives up, in these tests
KINDS = pytest.mark.parametrize("kind", [Tracker, TrackingProcess], ids=["thread", "process"])


@pytest.fixture(autouse=True)
def _restore_mlflow_http_env():
    saved = {k: os.environ.get(k) for k in HTTP_ENV_DEFAULTS}
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


class _Hung(http.server.BaseHTTPRequestHandler):
    """/health answers; every other request is held until the server is shut down."""

    release = threading.Event()

    def _serve(self):
        if self.path.rstrip("/").endswith("/health"):
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"OK")
            return
        self.release.wait(120)

    do_GET = do_POST = _serve

    def log_message(self, *args):
        pass


@pytest.fixture
def hung_server():
    _Hung.release = threading.Event()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hung)
    srv.daemon_threads = True
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    _Hung.release.set()
    srv.shutdown()
    srv.server_close()


@KINDS
def test_close_reports_progress_and_waits_until_done(kind, tmp_path):
    d = make_results(tmp_path / "results")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracker = kind(uri, None, d)
    tracker.start()
    tracker.submit(["c1", "c2", "c3"])
    seen: list[TrackProgress] = []
    report = tracker.close(stall=60, progress=seen.append)
    assert report == TrackReport(3, False, None)
    assert_mirrors(uri, d)
    with sqlite3.connect(tmp_path / "mlflow.db") as con:  # commits without waiting for the disk (tracking_store)
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    for p in seen:  # whatever the machine's speed, each line says where tracking stands
        assert 0 <= p.done <= p.total and p.stage in {"connecting", "reconciling", "logging", "verifying"}
        assert p.line().startswith(f"MLflow {uri}: {p.stage}, {p.done}/{p.total} configuration runs logged")
        assert "schedlab track" in p.line()


@KINDS
def test_close_gives_up_only_after_a_stall(kind, tmp_path, hung_server):
    d = make_results(tmp_path / "results")
    tracker = kind(hung_server, None, d)
    tracker.start()
    tracker.submit(["c1"])
    seen: list[TrackProgress] = []
    report = tracker.close(stall=STALL, progress=seen.append)
    assert report.failed and report.logged == 0
    assert f"tracking made no progress for {STALL:g} s" in report.error, report.error
    assert seen and seen[-1].idle > STALL  # it waited for the stall interval, not a fixed cut-off
    assert tracker.close() is not None  # a second close does not wait again


@KINDS
def test_ctrl_c_while_waiting_names_schedlab_track(kind, tmp_path, hung_server):
    d = make_results(tmp_path / "results")
    tracker = kind(hung_server, None, d)
    tracker.start()
    tracker.submit(["c1"])
    calls = []

    def ctrl_c(p: TrackProgress) -> None:
        calls.append(p)
        if len(calls) == 3:
            raise KeyboardInterrupt

    t0 = time.monotonic()
    with pytest.raises(Interrupted) as err:
        _wait_for_tracking(tracker, ResultStore(d), ctrl_c, [])
    assert len(calls) == 3 and time.monotonic() - t0 < 60  # stopped at the Ctrl-C, not at the stall interval
    assert f"`schedlab track {d}` finishes MLflow" in str(err.value)
    if kind is Tracker:
        assert tracker._stop  # the thread was told to stop
    else:
        assert not tracker._proc.is_alive()  # the process was ended
