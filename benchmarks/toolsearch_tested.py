"""Which table test each rule of the ranker has: each value shape, phrase and line of word families
(mcpstudio.VALUE_SHAPES, PHRASES, WORD_FAMILIES) removed alone, ToolIndexTests' table tests run in-process;
a rule none of whose removals fails a test has no table test (printed `-`). Issue 44: every rule left has one.

    python3 benchmarks/toolsearch_tested.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import mcpstudio  # noqa: E402
import test_mcpstudio  # noqa: E402

SKIP = {"test_recorded_corpus", "test_a_hostile_query_costs_linear_time", "test_found_tools_per_session",
        "test_servers_behind_a_search", "test_limits_and_no_match"}  # not tables of rules, or slow


def failing(stages, names) -> list:
    """The ToolIndexTests among `names` that fail with the ranker's rules as `stages` has them."""
    mcpstudio.VALUE_SHAPES, mcpstudio.PHRASES, mcpstudio.WORD_FAMILIES = stages.values, stages.phrases, stages.families
    mcpstudio.SEARCH_STAGES = stages
    mcpstudio.ToolIndex.__init__.__defaults__ = (stages,)
    failed = []
    for name in names:
        result = unittest.TestResult()
        test_mcpstudio.ToolIndexTests(name).run(result)
        if result.failures or result.errors:
            failed.append(name)
    return failed


def main() -> int:
    names = [name for name in unittest.TestLoader().getTestCaseNames(test_mcpstudio.ToolIndexTests) if name not in SKIP]
    base = mcpstudio.SEARCH_STAGES
    lines = [line for line in base.families.splitlines() if line.strip()]
    if failing(base, names):
        sys.exit("ToolIndexTests fail with every rule on: %s" % ", ".join(failing(base, names)))
    rules = [("value", "values", n, rule[0]) for n, rule in enumerate(base.values)]
    rules += [("phrase", "phrases", n, rule[0]) for n, rule in enumerate(base.phrases)]
    rules += [("family", "families", n, line) for n, line in enumerate(lines)]
    untested = 0
    for kind, stage, number, text in rules:
        if stage == "families":
            stages = base._replace(families="\n".join(line for n, line in enumerate(lines) if n != number))
        else:
            stages = base._replace(**{stage: tuple(rule for n, rule in enumerate(getattr(base, stage)) if n != number)})
        failed = failing(stages, names)
        untested += not failed
        print("%s %d\t%s\t%s" % (kind, number, ", ".join(name[5:] for name in failed) or "-", text[:90]), flush=True)
    print("%d rules, %d without a table test" % (len(rules), untested))
    return 1 if untested else 0


if __name__ == "__main__":
    sys.exit(main())
