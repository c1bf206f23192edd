"""Which of the replay JVM's code its optimizing compiler (C2) compiles: the code that runs for
every line read, and nothing else.

Why: a replay runs for seconds to minutes, and with HotSpot's default policy C2 compiled whatever
got warm, most of it code that runs once per query rather than once per line: Spark's SQL
parser (ANTLR), Java serialization of tasks, class loading, lambdas, Janino. On 2 cores its
compiler threads took as much CPU as the tasks (2M swss.rec events: 34 s against 36 s), and C1
alone (no C2 at all) left the tasks' hot loops (UTF8String searches, hashing, the hash
aggregation's map, inflating, line reading) in slow code. So for an input over C1_INPUT_BYTES
the JVM runs tiered, with a compiler directives file (`c2_directives.json`, HotSpot's
`-XX:CompilerDirectivesFile`) that lets C2 compile only the classes of the data path, and not
Spark's generated code (one huge method a stage, costly to compile, run at C1's speed); all
other code stays at C1's. `replay stats`, fresh processes, interleaved (BENCHMARKS.md, "C2 for
the data path alone"): 2M events 36.7 and 36.2 s against 43.4 and 40.2 s with C1 alone; 8M
68.7 and 69.1 s against 76.2 and 80.2 s with the default policy.

Up to C1_INPUT_BYTES C1 alone, as before: the tiered policy's fixed cost (C1's profiling
compiles of everything warm, C2's of the data path's classes, some 4 s of CPU) is not paid back
below about 1.5 million events (`stats`: 20,000 lines 16.5 s against 21 s; 1M events, 108 MB,
30 s against 32 s; 1.5M, 155 MB, about the same).

The directives need HotSpot's diagnostic options unlocked, and HotSpot says on its console how
many it added; that line goes to stderr (`-XX:+DisplayVMOutputToStderr`, never into a command's
output), where the relay of the JVM's stderr leaves it out (gateway.KNOWN_NOISE_FORMS).
Compiler options of the user's own (spark.driver.extraJavaOptions, JAVA_TOOL_OPTIONS) are left
alone: none of these is added then.
"""

from __future__ import annotations

import os
from pathlib import Path

#: inputs up to this many bytes (jvm.input_bytes) run with C1 alone
C1_INPUT_BYTES = 128 << 20
#: the classes C2 may compile (the data path), for tiered runs
DIRECTIVES = Path(__file__).with_name("c2_directives.json")
#: JVM options for a small input: C1 only
C1_ONLY = ("-XX:TieredStopAtLevel=1",)
#: words of compiler options a user may give, which ours would contradict
_USER_WORDS = ("TieredStopAtLevel", "TieredCompilation", "CompilerDirectives", "CompileCommand", "CompileThreshold",
               "DisplayVMOutput")


def user_options(java_options: str) -> str:
    """The JVM options the user gave: `java_options` (spark.driver.extraJavaOptions) and those of
    the JVM's environment."""
    return " ".join([java_options, os.environ.get("JAVA_TOOL_OPTIONS", ""), os.environ.get("JDK_JAVA_OPTIONS", "")])


def compiler_options(c1: bool, java_options: str = "") -> list[str]:
    """The compiler options of a replay's JVM: C1 alone (`c1`: an input up to C1_INPUT_BYTES),
    else C2 for the data path alone; none when the user chose compiler options of their own
    (`java_options`: spark.driver.extraJavaOptions), or the directives file is missing."""
    given = user_options(java_options)
    if any(word in given for word in _USER_WORDS):
        return []
    if c1:
        return list(C1_ONLY)
    if not DIRECTIVES.is_file():  # a JVM given a missing file does not start
        return []
    return ["-XX:+UnlockDiagnosticVMOptions", f"-XX:CompilerDirectivesFile={DIRECTIVES}",
            "-XX:+DisplayVMOutputToStderr"]
