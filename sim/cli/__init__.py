"""The command line (``capsim``): one module per command group, ``main`` the entry point.
"""
