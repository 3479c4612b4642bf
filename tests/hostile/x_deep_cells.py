"""Valid JSON whose cells list is itself buried 3 000 levels deep inside an object."""
FILES = {"tiny.ipynb": b'{"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [' + b"[" * 3000 + b"]" * 3000 + b"]}"}
EXPECT = {"score": 0, "flags": {"answer_cell_missing", "locked_cell_deleted"}, "message": "has no code in it"}
