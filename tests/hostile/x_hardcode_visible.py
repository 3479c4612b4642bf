"""Blank logic: the primal trace answers only the visible test's input (2, 3), hard-coded."""
ANSWERS = {"primal_trace": """def primal_trace(x1, x2):
    return {'w1': 2.0, 'w2': 3.0, 'w3': 6.0, 'w4': 0.9092974268256817, 'w5': 6.909297426825682}"""}
EXPECT = {"score": 2, "flags": set()}
