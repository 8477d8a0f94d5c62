"""`cannbuild bench`: the built FlashAttention against torch's attention, over shapes and
build variants, with results.json, report.md and charts.

Every implementation's output is judged against the float64 reference (the validation
judge) once per shape before it is timed: a fast wrong kernel is not a result.
"""
