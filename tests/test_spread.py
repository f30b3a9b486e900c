"""make test's share of the ``spread`` modules on the lines between the oldest and the default
(tests/conftest.py): each module on one line, every line some while there are enough."""

from pathlib import Path

from conftest import spread_lines

BETWEEN = ["4.0", "4.1", "4.2"]


def test_each_module_runs_on_one_line_between_in_name_order() -> None:
    where = spread_lines({"test_c.py", "test_a.py", "test_d.py", "test_b.py"}, BETWEEN)
    assert where == {"test_a.py": "4.0", "test_b.py": "4.1", "test_c.py": "4.2",
                     "test_d.py": "4.0"}


def test_the_marked_modules_here_give_every_line_between_one() -> None:
    tests = Path(__file__).resolve().parent
    marked = {p.name for p in tests.glob("test_*.py") if "pytest.mark.spread" in p.read_text()}
    assert {"test_connect.py", "test_not_loaded.py", "test_spark_submit.py"} <= marked
    assert sorted(set(spread_lines(marked, BETWEEN).values())) == BETWEEN
