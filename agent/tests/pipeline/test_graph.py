"""The pipeline's diagram (agent/pipeline/graph.py) and its run() name the same nodes."""
import ast
import inspect
import re

from agent.pipeline import graph


def _nodes_run_calls() -> set[str]:
    tree = ast.parse(inspect.getsource(graph.run))
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return {name for name in called if getattr(getattr(graph, name, None), "__module__", "").startswith("agent.pipeline.")}


def _nodes_drawn() -> set[str]:
    return {word for word in re.findall(r"[a-z_]+", graph.__doc__) if word != "run" and hasattr(graph, word) and callable(getattr(graph, word))
            and getattr(graph, word).__module__.startswith("agent.pipeline.")}


def test_every_node_run_calls_is_drawn_and_every_drawn_node_is_called():
    assert _nodes_run_calls() == _nodes_drawn()
    assert len(_nodes_run_calls()) >= 11  # the diagram omitted 8 of run()'s nodes before it was checked


def test_the_sub_nodes_the_diagram_names_live_where_it_says():
    # 「agent_loop: judge → rewrite → retrieve_again … loop.py, judge.py」: each name it draws is a
    # function of the module drawn beside it.
    from agent.pipeline import guards, judge, loop, requests

    for module, names in ((guards, ("retrieve_guard", "data_guard", "guards_node")), (judge, ("judge",)),
                          (loop, ("agent_loop", "rewrite", "retrieve_again")), (requests, tuple(requests.HANDLERS))):
        for name in names:
            assert name in graph.__doc__ and callable(getattr(module, name)), name
