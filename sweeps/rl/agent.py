"""A MaskablePPO agent trained on schedlab/Batch-v0, exported as a batch policy
by schedlab.gym.train. Its network is agent.npz and its training record (spec,
commit, budget, curve) training.json, both beside this file: declared data files,
hashed into the code's digest and shipped with it. Training:
301056 timesteps, seed 0, 122 CPU s, env {'trace': 'lublin_256.swf', 'nodes': 'None', 'sequence':
'256', 'window': '64', 'backfill': 'easy', 'span': '(3000, 10000)', 'reward': 'bsld', 'reward_mode':
'step'}
"""

from schedlab.api import data_file
from schedlab.api.agent import MLPAgent

DATA_FILES = ("agent.npz", "training.json")


class Agent(MLPAgent):
    name = "RL"
    summary = "a MaskablePPO agent choosing the head among the first 64 waiting jobs"
    backfill = True
    window = 64
    runtime_scale = 109441.0
    weights = data_file(__file__, "agent.npz")
