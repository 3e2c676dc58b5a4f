"""Commit files on disk (flock.elastic._commit_store): layout, save and load, the
newest two kept, every kind of damage passed over with a warning, write failures
that keep the previous commit.
"""

import json
import os

import numpy as np
import pytest

from flock.elastic._commit_store import MAGIC, CommitStore
from flock.errors import FlockElasticError

# CommitStore ------------------------------------------------------------------------


def commit_names(directory):
    return sorted(n for n in os.listdir(directory) if n.startswith("commit-"))


def save(store, name, *blocks):
    """A commit whose skeleton is its name and its blocks' sizes."""
    skeleton = json.dumps([name, [len(b) for b in blocks]]).encode()
    return store.save(skeleton, [np.frombuffer(b, dtype=np.uint8) for b in blocks])


def into_fresh_buffers(skeleton):
    name, sizes = json.loads(skeleton)
    buffers = [np.full(n, 0xEE, dtype=np.uint8) for n in sizes]
    return (name, buffers), buffers


def load(store):
    """(number, name, blocks as bytes) of the newest whole commit, or None."""
    found = store.load_latest(into_fresh_buffers)
    if found is None:
        return None
    name, buffers = found.loaded
    return found.number, name, [b.tobytes() for b in buffers]


def test_commit_file_layout(tmp_path):
    path = save(CommitStore(str(tmp_path)), "s", b"abc", b"", b"defg")
    with open(path, "rb") as handle:
        data = handle.read()
    skeleton = json.dumps(["s", [3, 0, 4]]).encode()
    assert data.startswith(MAGIC)
    assert data.endswith(skeleton + b"abcdefg")
    assert len(data) == len(MAGIC) + 24 + len(skeleton) + 7


def test_commit_save_and_load(tmp_path):
    store = CommitStore(str(tmp_path / "new"))
    assert store.load_latest(into_fresh_buffers) is None
    path = save(store, "one", b"state", bytes(range(256)) * 3)
    assert path == str(tmp_path / "new" / "commit-00000001.flock")
    assert load(store) == (1, "one", [b"state", bytes(range(256)) * 3])
    assert store.load_latest(into_fresh_buffers).path == path


def test_only_the_newest_two_commits_are_kept(tmp_path):
    store = CommitStore(str(tmp_path))
    for i in range(1, 6):
        save(store, f"state {i}", b"%d" % i)
    assert commit_names(tmp_path) == ["commit-00000004.flock", "commit-00000005.flock"]
    assert load(store) == (5, "state 5", [b"5"])
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def flip_last_byte(data):
    return data[:-1] + bytes([data[-1] ^ 0x01])


def flip_skeleton_byte(data):
    at = len(MAGIC) + 24 + 2
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]


@pytest.mark.parametrize("damage", [flip_last_byte, flip_skeleton_byte, lambda d: d[:-3],
                                    lambda d: d + b"x", lambda d: d[:20],
                                    lambda d: b"X" + d[1:], lambda d: b""],
                         ids=["data-flipped", "skeleton-flipped", "truncated", "longer",
                              "header-cut", "magic", "empty"])
def test_corrupt_newest_commit_falls_back_to_the_previous(tmp_path, capfd, damage):
    store = CommitStore(str(tmp_path))
    save(store, "good old state", b"old data")
    newest = save(store, "newer state, damaged below", b"new data!")
    with open(newest, "rb") as handle:
        data = handle.read()
    with open(newest, "wb") as handle:
        handle.write(damage(data))
    assert load(store) == (1, "good old state", [b"old data"])
    err = capfd.readouterr().err
    assert "warning" in err and newest in err
    assert not os.path.exists(newest) and os.path.exists(newest + ".corrupt")


def test_blocks_that_do_not_match_the_header_are_a_damaged_commit(tmp_path, capfd):
    store = CommitStore(str(tmp_path))
    save(store, "kept", b"k")
    newest = save(store, "new", b"abcd")

    def into_too_small(skeleton):
        buffers = [np.empty(3, dtype=np.uint8)]
        return buffers, buffers

    with pytest.raises(FlockElasticError, match="describes 3 bytes of data, its header says"):
        store.load_latest(into_too_small)  # both commits hold 4 and 1 bytes
    assert os.path.exists(newest + ".corrupt")
    capfd.readouterr()


def test_every_commit_corrupt_is_an_error(tmp_path, capfd):
    store = CommitStore(str(tmp_path))
    paths = [save(store, "a"), save(store, "b")]
    for path in paths:
        with open(path, "r+b") as handle:
            handle.write(b"garbage")
    with pytest.raises(FlockElasticError) as err:
        store.load_latest(into_fresh_buffers)
    assert all(p in str(err.value) for p in paths) and ".corrupt" in str(err.value)
    capfd.readouterr()


def test_save_where_no_directory_can_be_made(tmp_path):
    (tmp_path / "file").write_text("a regular file")
    store = CommitStore(str(tmp_path / "file" / "sub"))
    with pytest.raises(FlockElasticError, match="there is no earlier commit"):
        save(store, "x")


def test_failed_save_keeps_the_previous_commit(tmp_path):
    store = CommitStore(str(tmp_path))
    previous = save(store, "kept state", b"kept")
    with open(previous, "rb") as handle:
        before = handle.read()
    (tmp_path / ".commit-00000002.flock.tmp").mkdir()  # the temporary file cannot be written
    with pytest.raises(FlockElasticError) as err:
        save(store, "lost state")
    assert f"the previous commit {previous} is kept" in str(err.value)
    with open(previous, "rb") as handle:
        assert handle.read() == before
    assert commit_names(tmp_path) == ["commit-00000001.flock"]
    assert load(store) == (1, "kept state", [b"kept"])
