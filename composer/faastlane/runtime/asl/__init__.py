"""The Amazon States Language itself: the state model, JSONPath, intrinsic functions,
Choice rules, JSONata, variables, errors and JSON values. Pure functions of JSON;
nothing here runs a function or knows where work runs.
"""
