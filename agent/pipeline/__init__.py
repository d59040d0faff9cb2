"""The agent: one question in, a cited answer (or a refusal, or a proposal) out. `graph.run()`
is the whole path; see graph.py for the diagram and one module per node."""
from .graph import answer_question, context_for_next_turn, run
from .state import AgentResult, AgentState, Round, Trace, start, thresholds

__all__ = ["answer_question", "context_for_next_turn", "run", "AgentResult", "AgentState", "Round", "Trace", "start", "thresholds"]
