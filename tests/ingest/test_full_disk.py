"""A full disk during ingest: one line naming the data dir and what to do, and stores that stay consistent
(the next run, once there is room, completes). A real small filesystem: a tmpfs mounted in a private mount
namespace (`unshare`, as root or through a user namespace), so nothing outside the test sees it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_ollama import FakeOllama

ROOT = Path(__file__).resolve().parents[2]
TMPFS_MIB = 32
WORDS = ("pump", "valve", "seal", "rotor", "stator", "gasket", "impeller", "bearing", "priming", "pressure",
         "flow", "shaft", "casing", "motor", "coupling", "suction", "discharge", "volute", "cavitation", "head")


def namespace_prefix(mount: Path) -> list[str] | None:
    """The unshare command line that can mount a tmpfs here, or None when this machine allows neither form."""
    if shutil.which("unshare") is None:
        return None
    for prefix in (["unshare", "--mount", "--propagation", "private"],
                   ["unshare", "--user", "--map-root-user", "--mount"]):
        probe = subprocess.run([*prefix, "sh", "-c", f"mount -t tmpfs -o size=1m tmpfs '{mount}'"],
                               capture_output=True, check=False)
        if probe.returncode == 0:
            return prefix
    return None


@pytest.mark.parametrize(("room_kib", "stage"), [(300, "keyword"), (6_000, "vector")])
def test_a_full_disk_is_one_line_and_the_next_run_completes(tmp_path: Path, fake_ollama: FakeOllama,
                                                            room_kib: int, stage: str) -> None:
    mount = tmp_path / "small"
    mount.mkdir()
    prefix = namespace_prefix(mount)
    if prefix is None:
        pytest.skip("no mount namespace here (unshare refused): a small tmpfs cannot be mounted")
    if stage == "vector":       # Chroma holds only ids, vectors and files: vectors this long fill the room
        fake_ollama.models["nomic-embed-text"].dim = 1024
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(100):
        text = f"Manual {i}. " + " ".join(WORDS[(i * j + j * j) % len(WORDS)] + str((i + j) % 13) for j in range(600))
        (corpus / f"manual{i:03}.txt").write_text(text)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home")}
    script = f"mount -t tmpfs -o size={TMPFS_MIB}m tmpfs \"$1\" && shift && exec \"$@\""
    done = subprocess.run([*prefix, "sh", "-c", script, "sh", str(mount), sys.executable, "-m",
                           "tests.ingest.full_disk_driver", str(mount), str(corpus), fake_ollama.url,
                           str(room_kib)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    full = report["full"]
    assert full["rc"] == 1 and "Traceback" not in full["stderr"], full["stderr"]
    [line] = full["stderr"].splitlines()
    assert line.startswith(f"ragtui: the disk holding the data dir {mount / 'data'} is full (")
    assert "free space there (or set storage.data_dir to a disk with room) and run the same ingest again" in line
    after = report["after_full"]
    assert after["state"] == "interrupted"
    # the records are the journal: the keyword index holds exactly the chunks they say are done; Chroma may
    # hold vectors of a page it failed to finish (never of a chunk that is not done), and the next run drops them
    assert after["keyword_matches"] and after["vectors_within_done"], after
    assert "interrupted" in report["listed"]
    again = report["again"]
    assert again["rc"] == 0, again["stderr"]
    assert "chunks: " in again["stdout"] and "Traceback" not in again["stderr"]
    final = report["after_again"]
    assert final == {"done": final["done"], "keyword_matches": True, "vectors_match": True,
                     "vectors_within_done": True, "embedded": final["done"], "state": "ready"}, final
    assert final["done"] > 500                                       # every file's chunks (590 with the defaults)
    if stage == "vector":                                            # the keyword stage had finished, not the vectors
        assert after["done"] == final["done"] and after["embedded"] < final["done"]
    else:
        assert after["done"] < final["done"] and after["embedded"] == 0
    assert report["query_rc"] == 0, report["query_stderr"]
