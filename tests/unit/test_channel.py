import os
import time

import pytest

from kernelzero.judge.sandbox.process import Channel, ChannelError


def pair(key=b"k" * 32):
    r, w = os.pipe()
    return Channel(r, key), Channel(w, key)


def test_signed_messages_round_trip_in_order():
    rx, tx = pair()
    tx.send({"event": "outputs", "n": 1})
    tx.send({"event": "done"})
    os.close(tx.fd)
    deadline = time.monotonic() + 5
    assert rx.recv(deadline) == {"event": "outputs", "n": 1}
    assert rx.recv(deadline) == {"event": "done"}
    assert rx.recv(deadline) is None


def test_message_under_another_key_is_refused():
    r, w = os.pipe()
    Channel(w, b"x" * 32).send({"event": "done", "status": "ok"})
    with pytest.raises(ChannelError, match="authentication"):
        Channel(r, b"k" * 32).recv(time.monotonic() + 5)


def test_replayed_message_is_refused():
    rx, tx = pair()
    tx.send({"event": "built"})
    tx.seq = 0  # replay the same signed bytes: sequence numbers are part of the MAC
    tx.send({"event": "built"})
    deadline = time.monotonic() + 5
    rx.recv(deadline)
    with pytest.raises(ChannelError):
        rx.recv(deadline)


def test_plain_text_on_the_channel_is_refused_and_silence_times_out():
    rx, tx = pair()
    os.write(tx.fd, b'{"event": "done"}\n')
    with pytest.raises(ChannelError):
        rx.recv(time.monotonic() + 5)
    rx2, _tx2 = pair()
    with pytest.raises(TimeoutError):
        rx2.recv(time.monotonic() + 0.2)
