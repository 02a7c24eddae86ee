"""The SimPy model: clients, the service's admission path and the run of one tier."""
