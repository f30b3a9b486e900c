"""The offline advisor: which of my jobs would skewagg help, read from Spark's event logs with
neither a JVM nor pyspark (``skewagg.advise``, ``python -m skewagg advise``).

``eventlog`` reads the logs (Spark's codecs, rolling logs) into applications, executions, stages
and tasks; ``skew_rule`` is the rules' skew test (its defaults generated from the extension's
settings, its cases shared with the Scala suites); ``makespan`` schedules measured task times on
N slots; ``stage_plans`` finds what ran in a stage; ``decision`` says what skewagg would do there;
``estimates`` what that would save; ``advice`` puts them together; ``advice_report`` shows it.
"""

from skewagg.advisor.advice import advise
from skewagg.advisor.advice_report import AdviceReport, StageAdvice

__all__ = ["AdviceReport", "StageAdvice", "advise"]
