#!/usr/bin/env python3
"""The simulation benchmarks' anchor: MuJoCo's own multithreaded C++ rollout (`mujoco.rollout`
of the pinned wheel in python/pins.txt, so the same libmujoco as roboloop's).

Usage: mujoco_rollout_peer.py MODEL STEPS THREADS NOISE TRAJECTORIES

Rolls out TRAJECTORIES open-loop trajectories of STEPS physics steps each from the model's
default state, on a pool of THREADS threads, with mujoco-testspeed's control noise (each
dimension at centre + NOISE x half-range x (2 Halton(step, dim + 2) - 1)), and prints
`physics steps per second: X` over all trajectories. Only the rollout call is timed: the
controls and the output buffers are made before it.
"""
import sys
import time

import mujoco
import numpy as np
from mujoco import rollout


def noise_controls(model, steps, noise):
    """[1, steps, nu] controls: testspeed's Halton noise around each range's centre."""
    low, high = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
    limited = model.actuator_ctrllimited.astype(bool)
    center = np.where(limited, 0.5 * (high + low), 0.0)
    radius = np.where(limited, 0.5 * (high - low), 1.0) * noise
    halton = np.array([[mujoco.mju_Halton(step, dim + 2) for dim in range(model.nu)]
                       for step in range(steps)])
    return (center + radius * (2 * halton - 1))[np.newaxis]


def main(model_path, steps, threads, noise, trajectories):
    model = mujoco.MjModel.from_xml_path(model_path)
    data = [mujoco.MjData(model) for _ in range(threads)]
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    initial = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_forward(model, data[0])
    mujoco.mj_getState(model, data[0], initial, spec)
    initial = np.tile(initial, (trajectories, 1))
    control = noise_controls(model, steps, noise)
    state = np.empty((trajectories, steps, mujoco.mj_stateSize(model, spec)))
    sensordata = np.empty((trajectories, steps, model.nsensordata))
    with rollout.Rollout(nthread=threads) as pool:
        start = time.perf_counter()
        pool.rollout(model, data, initial, control, state=state, sensordata=sensordata)
        seconds = time.perf_counter() - start
    print(f"physics steps per second: {trajectories * steps / seconds:.1f}")


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]))
