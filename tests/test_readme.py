"""Every fenced block of README.md and docs/*.md runs as written, read from the Markdown itself.

How each block is run depends on its fence's language and on a `<!-- file: DIR/NAME -->` line just
before the fence, which says the block is that file of an example (the plugin example and its
config, say):

- python, no marker: a whole program, run as a script in a temp dir with this Python; exit 0 and no
  traceback. Each starts its own private redis-server.
- file blocks: written together into a temp dir as DIR/NAME; every `swssd.toml` among them is
  checked with `swssd check --config`, Python files are compiled, and `test_*.py` files are run
  with pytest (they start their own private redis-server).
- toml, no marker: must parse; a complete config (one with [[orchs]]) needs its plugin, so it must
  be a file block.
- redis: Redis commands, one a line, sent to a private redis-server.
- sh: README.md's first two (the setup commands, which CI runs) are not run here, nor a page's
  block that repeats one of them; a block of `swssd replay` commands is run line by line with
  bash in a temp dir holding `.venv/bin` (this Python's bin directory), its install line (the
  `replay` extra, already installed for the tests) excepted.
- sh, the cluster guide (a block that runs `spark-submit`): run whole with bash in such a temp dir,
  on free ports instead of the Spark ports it names; the replay on the standalone master must
  print what the one in local mode prints.
- sh, `.venv/bin/mkdocs serve` (for contributors): started on a free port, it must serve the site.
- text: a diagram, not code. output: what a command prints, not code (it may show the demo's
  SONiC table names, as the demo uses them).
- sh, the compatible layer's opt-in install (OPT_IN_INSTALL): the `compat/` project is installed
  the same way into a directory of the test's own (not into this venv, where the opt-in would
  shadow nothing but must not be left behind), and every program runs with that directory on its
  path, as after that install line.

Any other block fails the test, so a new block cannot go untested. No block may name a table or
channel of SONiC's schema (tests/fixtures/sonic_schema_names.txt): an example run on a switch must
not take or write a table orchagent uses.
"""

from __future__ import annotations

import os
import py_compile
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from swssd.redis.embedded_redis import EmbeddedRedis, free_port

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SCHEMA_NAMES = Path(__file__).resolve().parent / "fixtures" / "sonic_schema_names.txt"
FENCE = re.compile(r"^(?:<!-- file: (?P<file>\S+) -->\n)?```(?P<lang>[\w-]*)\n(?P<text>.*?)^```$", re.M | re.S)
#: The install line of the replay block (docs/replay.md): the test venv has the replay extra already.
REPLAY_INSTALL = ".venv/bin/pip install -q -e '.[replay]' --config-settings editable_mode=compat"
#: The install line of the opt-in `swsscommon` package (the compatible layer).
OPT_IN_INSTALL = ".venv/bin/pip install -q --no-deps -e compat/ --config-settings editable_mode=compat"
#: The contributors' command that serves the documentation site while it is written.
DOCS_SERVE = ".venv/bin/mkdocs serve"
#: The Spark ports the cluster guide names, replaced by free ones when the test runs it.
SPARK_PORTS = ("7077", "8080", "8081")


@dataclass(frozen=True)
class Block:
    document: Path
    line: int
    language: str
    text: str
    file: str | None

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"

    @property
    def kind(self) -> str:
        """How the test runs this block; "unknown" when it cannot."""
        if self.file is not None:
            return "file" if self.language in ("python", "toml") else "unknown"
        if self.language == "python":
            return "program"
        if self.language == "toml":
            return "unknown" if "[[orchs]]" in self.text else "toml-fragment"
        if self.language in ("redis", "text", "output"):
            return self.language
        if self.language == "sh":
            if self in setup_blocks() or self.text in [b.text for b in setup_blocks()]:
                return "setup"
            if "spark-submit" in self.text:
                return "cluster"
            if self.text.strip() == DOCS_SERVE:
                return "docs-serve"
            if self.text.splitlines()[0].split("#")[0].strip() == REPLAY_INSTALL and "swssd replay " in self.text:
                return "replay"
            if self.text.strip() == OPT_IN_INSTALL:
                return "opt-in-install"
        return "unknown"


def read_blocks(document: Path) -> list[Block]:
    text = document.read_text()
    return [
        Block(document, text.count("\n", 0, m.start("text")), m["lang"], m["text"], m["file"])
        for m in FENCE.finditer(text)
    ]


BLOCKS = [block for document in DOCUMENTS for block in read_blocks(document)]


def setup_blocks() -> list[Block]:
    """README.md's first two sh blocks: install and run the demo, install and test."""
    return [b for b in BLOCKS if b.document.name == "README.md" and b.language == "sh"][:2]


def of_kind(kind: str) -> list[Block]:
    return [b for b in BLOCKS if b.kind == kind]


def clean_env() -> dict[str, str]:
    """Nothing of the test run's environment that would point a block at another Redis or tree."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SWSSD_DB_CONFIG", "SWSSD_DB_GLOBAL_CONFIG", "REDIS_URL")}
    return env


def assert_ran(out: subprocess.CompletedProcess[str], what: str) -> None:
    shown = f"{what}: exit {out.returncode}\n--- stdout\n{out.stdout[-3000:]}\n--- stderr\n{out.stderr[-3000:]}"
    assert out.returncode == 0, shown
    assert "Traceback" not in out.stdout + out.stderr, shown


def test_every_block_is_one_the_test_runs() -> None:
    unknown = [f"{b.where}: ```{b.language}" + (f" (file {b.file})" if b.file else "") for b in BLOCKS
               if b.kind == "unknown"]
    assert not unknown, "blocks tests/test_readme.py does not know how to run:\n" + "\n".join(unknown)
    setup = setup_blocks()
    assert len(setup) == 2 and all(b.text.startswith("python3 -m venv .venv && ") for b in setup)
    assert of_kind("program") and len(of_kind("replay")) == 1 and len(of_kind("cluster")) == 1


def test_ci_runs_the_readmes_test_command_exactly() -> None:
    """.ci/run's last line is README.md's second setup command, character for character."""
    ci = (Path(__file__).parents[1] / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == setup_blocks()[1].text.strip()


def test_no_block_names_a_table_of_sonics_schema() -> None:
    names = {w for line in SCHEMA_NAMES.read_text().splitlines() if not line.startswith("#") for w in line.split()}
    assert {"PORT_TABLE", "ROUTE_TABLE", "PORT", "VLAN", "NOTIFICATIONS"} <= names
    named = [f"{b.where}: {sorted(set(found))}" for b in BLOCKS if b.kind not in ("setup", "output")
             and (found := [w for w in re.findall(r"\b[A-Z][A-Z0-9_]*\b", b.text) if w in names])]
    assert not named, "blocks naming SONiC's tables (use a name of the example's own):\n" + "\n".join(named)


def runs_replay(block: Block) -> bool:
    return '"replay"' in block.text


@pytest.fixture(scope="module")
def opt_in(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The opt-in `swsscommon` package installed as its install line (docs/porting.md) installs it (editable, in
    compat mode: a path), into a directory of the test's own."""
    assert [b.text.strip() for b in of_kind("opt-in-install")] == [OPT_IN_INSTALL]
    target = tmp_path_factory.mktemp("opt-in")
    # from a copy of compat/: an editable install writes its swssd_swsscommon.egg-info into the
    # project it installs, which must not be left in the source tree
    source = tmp_path_factory.mktemp("opt-in-source")
    shutil.copytree(ROOT / "compat", source / "compat")
    words = shlex.split(OPT_IN_INSTALL)[1:]  # what follows the venv's pip
    out = subprocess.run([sys.executable, "-m", "pip", *words, "--target", str(target)],
                         capture_output=True, text=True, timeout=300, cwd=source, env=clean_env())
    assert out.returncode == 0, out.stderr[-3000:]
    return target


def opt_in_path(target: Path) -> str:
    """PYTHONPATH for what was installed into `target`: it and the paths its .pth files name (what
    Python's site module adds for a site-packages directory; PYTHONPATH entries get no .pth pass)."""
    paths = [str(target)]
    for pth in sorted(target.glob("*.pth")):
        paths += [line for line in pth.read_text().splitlines() if line and not line.startswith(("#", "import"))]
    return os.pathsep.join(paths)


@pytest.mark.parametrize("block", of_kind("program"), ids=lambda b: b.where)
def test_a_program_runs_as_written(block: Block, tmp_path: Path, opt_in: Path) -> None:
    """A program that runs `swssd replay` (a JVM start or two) gets more time, and needs the
    replay extra; the opt-in package is on the path, as after its install line."""
    if runs_replay(block):
        pytest.importorskip("pyspark", reason="the replay extra: pip install -e '.[replay]'")
    script = tmp_path / "example.py"
    script.write_text(block.text)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300 if runs_replay(block) else 60, cwd=tmp_path,
                         env={**clean_env(), "PYTHONPATH": opt_in_path(opt_in)})
    assert_ran(out, f"{block.where} (python)")


def file_groups() -> dict[str, list[Block]]:
    groups: dict[str, list[Block]] = {}
    for block in of_kind("file"):
        assert block.file is not None and "/" in block.file, f"{block.where}: marker names DIR/NAME"
        groups.setdefault(block.file.split("/")[0], []).append(block)
    return groups


@pytest.mark.parametrize("group", sorted(file_groups()))
def test_a_file_example_checks_and_its_test_passes(group: str, tmp_path: Path) -> None:
    """The example's files where its blocks say; `swssd check` on its config, run elsewhere, as a
    user checks it before `swssd run`."""
    configs, tests = [], []
    for block in file_groups()[group]:
        path = tmp_path / block.file  # type: ignore[operator]
        assert not path.exists(), f"{block.where}: {block.file} given twice"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.text)
        if path.suffix == ".py":
            py_compile.compile(str(path), cfile=str(tmp_path / "compiled.pyc"), doraise=True)
            if path.name.startswith("test_"):
                tests.append(path)
        else:
            parsed = tomllib.loads(block.text)
            if "orchs" in parsed:
                assert path.name == "swssd.toml", f"{block.where}: a config is a swssd.toml file"
                configs.append(path)
    assert configs, f"file example {group!r} has no swssd.toml"
    for config in configs:
        out = subprocess.run([sys.executable, "-m", "swssd.cli", "check", "--config", str(config)],
                             capture_output=True, text=True, timeout=60, cwd="/", env=clean_env())
        assert_ran(out, f"swssd check --config {group}/{config.name}")
        assert out.stdout.splitlines()[-1] == f"{config}: OK"
    for test in tests:
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test.name],
                             capture_output=True, text=True, timeout=120, cwd=test.parent, env=clean_env())
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]


@pytest.mark.parametrize("block", of_kind("toml-fragment"), ids=lambda b: b.where)
def test_a_toml_fragment_parses(block: Block) -> None:
    assert tomllib.loads(block.text)


@pytest.mark.parametrize("block", of_kind("redis"), ids=lambda b: b.where)
def test_redis_commands_run_on_a_private_server(block: Block) -> None:
    with EmbeddedRedis() as server:
        client = redis.Redis(port=server.port, decode_responses=True)
        try:
            for line in block.text.splitlines():
                if line.strip():
                    assert client.execute_command(*shlex.split(line)) in ("OK", True), line
        finally:
            client.close()


@pytest.mark.parametrize("block", of_kind("replay"), ids=lambda b: b.where)
def test_the_replay_commands_run_as_written(block: Block, tmp_path: Path) -> None:
    """After the install line (the test venv has the replay extra) each line runs with bash, in a
    directory whose `.venv/bin` is this Python's: the demo makes the capture, replay reads it.
    Several JVM starts: the slowest test here."""
    pytest.importorskip("pyspark", reason="the replay extra: pip install -e '.[replay]'")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "bin").symlink_to(Path(sys.executable).parent)
    lines = [line for line in block.text.splitlines() if line.strip()]
    assert lines[0].split("#")[0].strip() == REPLAY_INSTALL
    for line in lines[1:]:
        out = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", line], capture_output=True, text=True,
                             timeout=300, cwd=tmp_path, env=clean_env())
        assert_ran(out, line)


def venv_dir(tmp_path: Path) -> None:
    """`.venv` in `tmp_path` is this Python's virtual environment, as after the install line: the
    whole of it, so that `.venv/bin/python` finds its pyvenv.cfg and packages (a `.venv/bin` alone
    gives the scripts, whose first line names the interpreter, but a bare `python`)."""
    if sys.prefix != sys.base_prefix:
        (tmp_path / ".venv").symlink_to(sys.prefix)
    else:
        (tmp_path / ".venv").mkdir()
        (tmp_path / ".venv" / "bin").symlink_to(Path(sys.executable).parent)


@pytest.mark.parametrize("block", of_kind("cluster"), ids=lambda b: b.where)
def test_the_cluster_guide_runs_on_a_local_standalone_master(block: Block, tmp_path: Path) -> None:
    """The guide's block, whole, with bash: a standalone master and worker from PySpark's own Spark,
    the replay through spark-submit on it, the same replay in local mode, the two compared (by
    the block's own diff, and here). The master must have run the application: not local mode."""
    pytest.importorskip("pyspark", reason="the replay extra: pip install -e '.[replay]'")
    venv_dir(tmp_path)
    text = block.text
    for port in SPARK_PORTS:
        assert port in text, port
        text = re.sub(rf"\b{port}\b", str(free_port()), text)
    script = tmp_path / "cluster.sh"
    script.write_text(text)
    try:
        out = subprocess.run(["bash", "-e", "-o", "pipefail", str(script)], capture_output=True, text=True,
                             timeout=540, cwd=tmp_path, env=clean_env())
    finally:
        for pid_file in ("worker.pid", "master.pid"):  # stopped by the block; not left behind if it failed
            pid = tmp_path / pid_file
            if pid.exists():
                subprocess.run(["kill", pid.read_text().strip()], capture_output=True)
    master_log = (tmp_path / "master.log").read_text() if (tmp_path / "master.log").exists() else ""
    assert_ran(out, f"{block.where} (cluster)\n--- master.log\n{master_log[-2000:]}")
    assert out.stdout.strip().splitlines()[-1] == "the same results"
    assert "Registered app swssd-replay" in master_log
    results = [[line for line in (tmp_path / name).read_text().splitlines() if not line.startswith("swssd replay:")]
               for name in ("local.txt", "cluster.txt")]
    assert results[0] == results[1] and any(line.startswith("per table") for line in results[0])


@pytest.mark.parametrize("block", of_kind("docs-serve"), ids=lambda b: b.where)
def test_mkdocs_serve_serves_the_site(block: Block, tmp_path: Path) -> None:
    """The contributors' command, from the clone, on a free port: the first page is served."""
    port = free_port()
    words = shlex.split(block.text.strip())
    assert words[0] == ".venv/bin/mkdocs"
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        server = subprocess.Popen([str(Path(sys.executable).parent / "mkdocs"), *words[1:], "--dev-addr",
                                   f"127.0.0.1:{port}"], cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT,
                                  # its build directory under the test's own (terminated, it leaves it behind)
                                  env={**clean_env(), "NO_MKDOCS_2_WARNING": "1", "TMPDIR": str(tmp_path)})
    try:
        deadline, page = time.monotonic() + 120, ""
        while time.monotonic() < deadline and not page:
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read().decode()
            except OSError:
                assert server.poll() is None, log.read_text()[-3000:]
                time.sleep(0.5)
        assert "Get started" in page, log.read_text()[-3000:]
    finally:
        server.terminate()
        server.wait(30)
