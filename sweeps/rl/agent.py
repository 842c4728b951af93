"""A slot-scoring agent (a heuristic cloned, then CMA-ES) trained on schedlab/Batch-v0, exported as a batch policy
by schedlab.gym.slot_scorer. Its network is agent.npz and its training record (spec,
commit, budget, curve) training.json, both beside this file: declared data files,
hashed into the code's digest and shipped with it. Training:
8857837 timesteps, seed 0, 178 CPU s, env {'trace': 'lublin_256.swf', 'nodes': None, 'sequence':
1024, 'window': 128, 'backfill': 'easy', 'span': [3000, 10000]}
"""

from schedlab.api import data_file
from schedlab.api.agent import SlotAgent

DATA_FILES = ("agent.npz", "training.json")


class Agent(SlotAgent):
    name = "RL"
    summary = "a slot-scoring network choosing the head among the first 128 waiting jobs"
    backfill = True
    window = 128
    runtime_scale = 109441.0
    weights = data_file(__file__, "agent.npz")
    features = "invariant"
