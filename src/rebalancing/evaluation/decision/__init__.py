"""Stage 3, decision: the systems as declarations (candidates, deciding scores in order, how to
run a pick), and the verdict for a system on a Summary: who is set aside, who is dominated, the
recommendation or the tie, and why. Takes the scoring stage's Summary; hands the report stage a
Verdict. Imports only the earlier stages."""

from rebalancing.evaluation.decision.systems import ANY_SYSTEM, SYSTEM_VERDICTS, System, how_to_run
from rebalancing.evaluation.decision.verdict import Verdict, decide, ranking

__all__ = ["ANY_SYSTEM", "SYSTEM_VERDICTS", "System", "Verdict", "decide", "how_to_run", "ranking"]
