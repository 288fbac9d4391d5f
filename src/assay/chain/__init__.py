"""The subnet a validator sets weights on: the metagraph it reads and the weights it sets.

An I/O part like the store: `interface.py` is the abstract chain, `snapshot.py` a
metagraph file (dry runs, tests, air-gapped validators), `bittensor.py` the live chain
through the bittensor SDK (the `chain` extra). `conform.py` turns weights per hotkey
into the UID vector the chain takes.
"""
