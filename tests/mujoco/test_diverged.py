"""MuJoCo warnings of a step: the scoped handler restores what was there, and divergence() names the warning
and the sub-step where the time jumped back (MuJoCo's autoreset)."""

import mujoco
import numpy as np

from contactkit.mujoco.diverged import captured_warnings, clear_warnings, divergence

H = 0.002
TIMES = H * np.arange(1, 26)


def data():
    return mujoco.MjData(mujoco.MjModel.from_xml_string("<mujoco><worldbody/></mujoco>"))


def test_a_clean_rollout_is_trusted():
    assert divergence(data(), 1.0 + TIMES, 1.0, H, []) is None


def test_a_reset_is_found_by_its_time_even_without_a_warning():
    times = 0.5 + TIMES
    times[6:] = H * np.arange(1, 20)  # reset to t = 0 during sub-step 7, then stepping on
    found = divergence(data(), times, 0.5, H, [])
    assert found == "a reset without a warning (time reset at physics sub-step 7 of 25)"


def test_warning_counters_are_named_with_the_message_and_cleared():
    d = data()
    d.warning[int(mujoco.mjtWarning.mjWARN_CONTACTFULL)].number = 2
    found = divergence(d, TIMES, 0.0, H, ["Too many contacts. Time = 0.0040.", "Too many contacts. Time = 0.0060."])
    assert found == "mjWARN_CONTACTFULL: Too many contacts."
    clear_warnings(d)
    assert divergence(d, TIMES, 0.0, H, []) is None


def test_captured_warnings_restores_the_previous_handler():
    def mine(message):
        pass

    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(mine)
    try:
        with captured_warnings() as messages:
            assert mujoco.get_mju_user_warning() is not mine
        assert mujoco.get_mju_user_warning() is mine and messages == []
    finally:
        mujoco.set_mju_user_warning(previous)
