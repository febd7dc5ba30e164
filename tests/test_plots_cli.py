"""`--plot` through the real CLI: `collections info NAME --plot` draws the entropy histogram as bars whose heights
follow the counts of a collection with a known entropy distribution, and `eval --plot` draws each mode's metric as a
whisker from the low end of its CI to the high end with the mean marked; both fit 80 columns, and neither writes an
escape sequence into a pipe."""

from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
from pathlib import Path

from tests.cli_run import cli, command, run_ragtui
from tests.fake_ollama import FakeOllama

ESCAPE = "\x1b"
BLOCK = "█"


def uniform_text(letters: str, words: int, shift: int) -> str:
    """Words that are rotations of `letters`, each letter once per word: the bytes (letters and the spaces between
    words) nearly equally frequent, so the entropy is about log2(len(letters) + 1) bits per byte; `shift` makes
    texts of the same alphabet differ (a file equal to another would be a duplicate, not a chunk)."""
    n = len(letters)
    return " ".join(letters[(shift + j) % n:] + letters[:(shift + j) % n] for j in range(words))


# bin of 0.4 bits -> files: 7 letters + space = 3.0 bits (bin 7), 4 + space = 2.32 (bin 5), 22 + space = 4.52 (bin 11)
ALPHABETS = {7: ("abcdefg", 6), 5: ("hijk", 3), 11: ("abcdefghijklmnopqrstuv", 1)}


def known_collection(tmp_path: Path, fake: FakeOllama) -> dict[int, int]:
    """A collection of one-chunk files whose entropy bins are known; {bin: chunks}."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for b, (letters, files) in ALPHABETS.items():
        assert int(math.log2(len(letters) + 1) / 0.4) == b
        for i in range(files):
            (folder / f"bin{b}-{i}.txt").write_text(uniform_text(letters, 30, i), encoding="utf-8")
    done = cli(tmp_path, fake.url, "ingest", str(folder), "-c", "known")
    assert done.returncode == 0, done.stderr
    histogram = json.loads(cli(tmp_path, fake.url, "collections", "info", "known", "--json").stdout)["histogram"]
    assert {i: n for i, n in enumerate(histogram) if n} == {b: files for b, (_, files) in ALPHABETS.items()}
    return {b: files for b, (_, files) in ALPHABETS.items()}


def cli_at(columns: int, tmp_path: Path, fake: FakeOllama, *args: str) -> subprocess.CompletedProcess[str]:
    """`cli` with COLUMNS set, as a terminal of that width sets it (stdout is still a pipe)."""
    argv, env = command(tmp_path, fake.url, *args)
    return run_ragtui(argv, {**env, "COLUMNS": str(columns)})


def plot_area(lines: list[str]) -> tuple[int, int, int, int]:
    """(first canvas line, last canvas line, left column, right column) inside the plot's box."""
    top = next(i for i, line in enumerate(lines) if "┌" in line)
    bottom = next(i for i, line in enumerate(lines) if "└" in line)
    return top + 1, bottom - 1, lines[top].index("┌") + 1, lines[top].index("┐") - 1


def column_of(x: float, lo: float, hi: float, left: int, right: int) -> int:
    return left + round((x - lo) / (hi - lo) * (right - left))


def test_collection_info_plot_draws_bars_as_tall_as_the_counts(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    counts = known_collection(tmp_path, fake_ollama)
    done = cli_at(80, tmp_path, fake_ollama, "collections", "info", "known", "--plot")
    assert done.returncode == 0, done.stderr
    assert ESCAPE not in done.stdout                                   # a pipe gets plain characters
    assert "entropy histogram (bits/byte): chunks per bin, 10 in all" in done.stdout
    assert "#" * 10 not in done.stdout                                 # the plot instead of the table
    assert "clusters (RAGWeed 2g):" in done.stdout and "files 10, chunks 10" in done.stdout
    lines = done.stdout.splitlines()
    first, last, _, _ = plot_area(lines)
    assert max(len(line) for line in lines[first - 2:last + 4]) == 80     # title to x label, as wide as the terminal
    assert_bars_follow(lines, counts)


def assert_bars_follow(lines: list[str], counts: dict[int, int]) -> None:
    """In the histogram drawn in `lines` (bins of 0.4 bits over 0-8), the bar of each bin in `counts` stands on the
    axis with its top on the y tick of its count, and an empty bin has none."""
    first, last, left, right = plot_area(lines)
    ticks = {int(m.group(1)): i for i, line in enumerate(lines[first:last + 1], first)
             if (m := re.match(r"\s*(\d+)┤", line))}
    for b, n in counts.items():
        column = column_of((b + 0.5) * 0.4, 0.0, 8.0, left, right)
        filled = [i for i in range(first, last + 1) if lines[i][column] == BLOCK]
        assert filled and filled[-1] == last, (b, filled)              # each bar stands on the axis
        assert filled[0] == ticks[n], (b, n, filled[0], ticks)         # and its top is on the tick of its count
        assert filled == list(range(filled[0], last + 1))              # a bar, not dots
    empty = column_of(1.5 * 0.4, 0.0, 8.0, left, right)                # bin 1 holds no chunk
    assert all(lines[i][empty] != BLOCK for i in range(first, last + 1))


def test_collection_info_plot_is_refused_with_json_and_table_stays_without_it(tmp_path: Path,
                                                                             fake_ollama: FakeOllama) -> None:
    known_collection(tmp_path, fake_ollama)
    both = cli(tmp_path, fake_ollama.url, "collections", "info", "known", "--plot", "--json")
    assert both.returncode == 2 and "--plot" in both.stderr and both.stdout == ""
    table = cli(tmp_path, fake_ollama.url, "collections", "info", "known")
    assert " 2.8- 3.2  " + "#" * 40 + "  6" in table.stdout
    narrow = cli_at(30, tmp_path, fake_ollama, "collections", "info", "known", "--plot")
    assert "a plot needs 40" in narrow.stdout and " 2.8- 3.2  " in narrow.stdout


def spread_dataset(folder: Path) -> Path:
    """A BEIR dataset whose keyword nDCG@10 differs between queries: half the queries are judged against a document
    that shares their words, half against one that shares none, so the mean sits inside a wide CI."""
    (folder / "qrels").mkdir(parents=True)
    topics = ["turbine blade cooling air", "swept wing compressibility drag", "laminar boundary layer separation",
              "centrifugal pump impeller priming", "float valve cistern refill", "clay roof tiles gutter"]
    corpus = {f"d{i}": topic.capitalize() + " explained in plain words." for i, topic in enumerate(topics)}
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in corpus.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": t}) + "\n"
                                                  for i, t in enumerate(topics)))
    judged = [(f"q{i}", f"d{i if i % 2 == 0 else (i + 2) % len(topics)}") for i in range(len(topics))]
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" +
                                               "".join(f"{q}\t{d}\t1\n" for q, d in judged))
    return folder


def table_row(stdout: str, mode: str) -> tuple[float, float, float]:
    """(mean, ci_low, ci_high) of the table's first metric (nDCG@10) for `mode`."""
    m = re.search(rf"^\| {mode} \| ([\d.]+) \[([\d.]+), ([\d.]+)\]", stdout, re.M)
    assert m, stdout
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


def test_eval_plot_draws_each_modes_ci_as_a_whisker_at_its_values(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    dataset = spread_dataset(tmp_path / "spread")
    done = cli_at(80, tmp_path, fake_ollama, "eval", "--dataset", str(dataset), "--modes", "keyword", "vector",
                  "--plot", "ndcg@10", "recall@10")
    assert done.returncode == 0, done.stderr
    assert ESCAPE not in done.stdout
    plot = done.stdout[done.stdout.index("nDCG@10 per mode: mean and 95% bootstrap CI"):]
    assert "R@10 per mode: mean and 95% bootstrap CI" in plot
    lines = plot.splitlines()
    first, last, _, _ = plot_area(lines)
    assert max(len(line) for line in lines[:last + 3]) <= 80
    ticks = [i for i, c in enumerate(lines[last + 1]) if c == "┬"]     # 0.00, 0.25, ..., 1.00 below the axis
    assert lines[last + 2].split() == ["0.00", "0.25", "0.50", "0.75", "1.00"]
    for mode in ("keyword", "vector"):
        mean, low, high = table_row(done.stdout, mode)
        assert high - low > 0.1, (mode, low, high)                  # the dataset spreads both modes' scores
        row = next(line for line in lines[first:last + 1] if line.split("┤")[0].strip() == mode)
        ends = [i for i, c in enumerate(row) if c == "|"]

        def column(x: float) -> int:
            return ticks[0] + round(x * (ticks[-1] - ticks[0]))

        assert abs(row.index("●") - column(mean)) <= 1, (mode, mean, row)
        assert len(ends) == 2 and abs(ends[0] - column(low)) <= 1 and abs(ends[1] - column(high)) <= 1, row
        assert set(row[ends[0] + 1:ends[1]]) == {"-", "●"}         # one whisker from end to end


def test_eval_plot_usage_errors(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    """A --plot that cannot be drawn is refused before anything runs."""
    dataset = str(spread_dataset(tmp_path / "spread"))
    for args, said in ((["--plot", "--json"], "--json"), (["--plot", "nope"], "--plot nope: not a metric"),
                       (["--answers", "--plot", "ndcg@10"], "--plot ndcg@10: not a metric")):
        done = cli(tmp_path, fake_ollama.url, "eval", "--dataset", dataset, *args)
        assert done.returncode == 2 and said in done.stderr and done.stdout == "", (args, done.stderr)
        assert not (tmp_path / "data" / "eval").exists()


def test_eval_answers_plot_draws_a_row_per_rate_and_a_count_on_its_own_axis(tmp_path: Path,
                                                                            fake_ollama: FakeOllama) -> None:
    from ragtui.evaluation.answer_metrics import ANSWER_METRICS, COUNT_METRICS
    from tests.test_answer_eval_cli import ollama_reader, write_dataset

    fake_ollama.responder = ollama_reader
    dataset = write_dataset(tmp_path / "mini")
    rates = [m for m in ANSWER_METRICS if m not in COUNT_METRICS]
    done = cli_at(80, tmp_path, fake_ollama, "--set", "retrieve.min_similarity=0", "eval", "--answers",
                  "--dataset", str(dataset), "--plot", *rates, "llm_calls")
    assert done.returncode == 0, done.stderr
    assert ESCAPE not in done.stdout
    table = {m.group(1): (float(m.group(2)), float(m.group(3)), float(m.group(4)))
             for m in re.finditer(r"^\| (\w+) \| ([\d.]+) \[([\d.]+), ([\d.]+)\]", done.stdout, re.M)}
    assert table["answer_contains"][0] == 0.667 and table["llm_calls"] == (4.0, 4.0, 4.0)
    for absent in ("faithfulness", "correctness", "abstention"):      # no judge, no unanswerable question
        assert absent not in table and f"(no question of this run has {absent}: nothing to plot)" in done.stdout
    plot = done.stdout[done.stdout.index("answer metrics: mean and 95% bootstrap CI"):]
    lines = plot.splitlines()
    first, last, _, _ = plot_area(lines)
    rows = [(i, line.split("┤")[0].strip()) for i, line in enumerate(lines[first:last + 1], first) if "┤" in line]
    assert [name for _, name in rows] == [m for m in rates if m in table]     # every rate measured, in order
    assert [b - a for (a, _), (b, _) in itertools.pairwise(rows)] == [2] * (len(rows) - 1)   # evenly
    ticks = [i for i, c in enumerate(lines[last + 1]) if c == "┬"]
    for i, name in rows:
        mean = table[name][0]
        assert abs(lines[i].index("●") - (ticks[0] + round(mean * (ticks[-1] - ticks[0])))) <= 1, lines[i]
    count = plot[plot.index("llm_calls per question: mean and 95% bootstrap CI"):].splitlines()
    first, last, left, right = plot_area(count)
    row = next(line for line in count[first:last + 1] if line.startswith("llm_calls┤"))
    assert abs(row.index("●") - (left + right) / 2) <= 1                  # 4.0 in the middle of its own axis
    assert "4.00" in count[last + 2].split()


def on_a_terminal(tmp_path: Path, fake: FakeOllama, extra_env: dict[str, str], *args: str) -> str:
    """What `ragtui ARGS` writes with its stdout on a pseudo-terminal (a fresh process: the warm one's stdout is a
    pipe)."""
    import os
    import pty

    argv, env = command(tmp_path, fake.url, *args)
    env = {k: v for k, v in env.items() if k != "NO_COLOR"}
    master, slave = pty.openpty()
    process = subprocess.Popen(argv, stdout=slave, stderr=subprocess.DEVNULL, env={**env, **extra_env})
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:                     # EIO: the process closed its end
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert process.wait(timeout=120) == 0
    return out.decode()


def test_plot_is_coloured_on_a_terminal_unless_no_color(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    counts = known_collection(tmp_path, fake_ollama)
    coloured = on_a_terminal(tmp_path, fake_ollama, {"COLUMNS": "80"}, "collections", "info", "known", "--plot")
    assert "\x1b[" in coloured and BLOCK in coloured
    plain = on_a_terminal(tmp_path, fake_ollama, {"COLUMNS": "80", "NO_COLOR": "1"},
                          "collections", "info", "known", "--plot")
    assert ESCAPE not in plain
    assert_bars_follow(plain.replace("\r\n", "\n").splitlines(), counts)
