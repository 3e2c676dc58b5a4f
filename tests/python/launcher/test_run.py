"""Unit tests of flockrun.run's signal forwarding: each signal reaches mpirun once.

No process is started: subprocess.Popen is replaced by a fake that records the
signals sent to it, and the handler is called by hand at the moments a real
signal could land.
"""

import signal
import subprocess

import pytest

from flockrun.run import _Forwarder


class FakeChild:
    """Stands in for mpirun's Popen; keeps the signals sent to it."""

    def __init__(self, *_args, **_kwargs):
        self.signals = []

    def send_signal(self, signum):
        self.signals.append(signum)


@pytest.fixture
def fake_popen(monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", FakeChild)


class SignalDuringPopen(_Forwarder):
    """A signal lands while Popen runs, before the child exists."""

    def start(self, argv, environ, **popen_args):
        self(signal.SIGINT, None)
        return super().start(argv, environ, **popen_args)


class SignalRightAfterTheChildIsKnown(_Forwarder):
    """A signal lands just after ``child`` is assigned, before ``start`` goes on."""

    @property
    def child(self):
        return self.__dict__.get("_child")

    @child.setter
    def child(self, value):
        self.__dict__["_child"] = value
        if value is not None:
            self(signal.SIGINT, None)


@pytest.mark.parametrize("forwarder", [SignalDuringPopen, SignalRightAfterTheChildIsKnown])
def test_a_signal_landing_while_mpirun_starts_is_sent_once(fake_popen, forwarder):
    handler = forwarder()
    child = handler.start(["mpirun"], {})
    assert child.signals == [signal.SIGINT]
    handler(signal.SIGTERM, None)  # once the child runs, the handler sends at once
    assert child.signals == [signal.SIGINT, signal.SIGTERM]
    assert handler.received == [signal.SIGINT, signal.SIGTERM]
