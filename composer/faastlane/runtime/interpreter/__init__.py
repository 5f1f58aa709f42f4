"""What each state type does (states) and how data flows through a state's
input and output processing (dataflow).
"""
