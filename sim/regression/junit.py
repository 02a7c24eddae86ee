"""A JUnit XML report of a comparison: one test case per tier × check.

Follows the common JUnit schema (``testsuites`` > ``testsuite`` > ``testcase``, a
``failure`` element per regression) so any CI shows the gate's failures natively:
the suite is the scenario, the class name ``capsim.<scenario>.<tier>`` and the case
name the metric. Improvements and noise pass, with the reason in ``system-out``. The
suite's properties carry the provenance, the bill's headline (:mod:`.headline`) and one
``input_changed`` per input that differs from the baseline's.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from .compare import Comparison
from .headline import bill_headline


def render(cmp: Comparison) -> str:
    """The XML text (UTF-8, with declaration)."""
    failures = len(cmp.regressions)
    tests = len(cmp.checks)
    root = ET.Element("testsuites", name=f"capsim {cmp.command}", tests=str(tests),
                      failures=str(failures), errors="0", skipped="0", time="0")
    suite = ET.SubElement(root, "testsuite", name=f"capsim {cmp.command} {cmp.name}",
                          tests=str(tests), failures=str(failures), errors="0",
                          skipped="0", time="0")
    props = ET.SubElement(suite, "properties")
    for key, value in (("baseline", cmp.base_label), ("now", cmp.now_label),
                       ("baseline_capsim_version", cmp.base.capsim_version),
                       ("baseline_seed", str(cmp.base.seed)),
                       ("replications", f"{cmp.base.replications}/{cmp.now.replications}"),
                       ("headline", bill_headline(cmp)),
                       *(("input_changed", line) for line in cmp.inputs_changed),
                       *(("input_not_recorded", line) for line in cmp.inputs_unknown)):
        ET.SubElement(props, "property", name=key, value=value)
    for c in cmp.checks:
        cls = f"capsim.{cmp.name}." + (c.tier if c.tier is not None else "run")
        case = ET.SubElement(suite, "testcase", classname=cls, name=c.metric, time="0")
        text = (f"{c.label}: baseline {c.base}, now {c.now}, change {c.change or '0'}, "
                f"tolerance {c.tolerance}")
        if c.verdict == "regression":
            fail = ET.SubElement(case, "failure", type="regression",
                                 message=f"{c.tier or 'run'}: {c.label} regressed "
                                         f"({c.base} → {c.now})")
            fail.text = text
        else:
            out = ET.SubElement(case, "system-out")
            out.text = f"{c.verdict}{' (' + c.note + ')' if c.note else ''}: {text}"
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
