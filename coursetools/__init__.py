"""Helpers the learners' notebooks import to draw and to measure. Nothing here grades."""
