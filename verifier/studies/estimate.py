"""Know before you wait: search for a few seconds, then forecast the distinct states, the depth
and the run time from the finished levels (verifier/core/estimate.py: the trend of the
level-to-level ratios). A forecast, not a bound; or the exact figures when the sample finished
the whole space."""
from __future__ import annotations

from typing import Optional

from verifier.core.estimate import predict
from verifier.core.settings import Limits


def sample(engine_run, model, properties, settings, seconds: float) -> dict:
    """The sample's figures and the forecast (`exact` when the sample covered everything;
    `forecast` None when too few levels finished)."""
    result = engine_run(model, properties, settings.but(limits=Limits(time_budget=seconds),
                                                        options={"keep_going": True}))
    levels = list(result.states_per_level)
    rate = result.distinct_states / max(result.seconds, 1e-9)
    report = {"sample_seconds": round(result.seconds, 1), "sample_states": result.distinct_states,
              "sample_levels": levels, "states_per_second": round(rate)}
    if result.explored_all:
        report.update(exact=True, states=result.distinct_states, depth=result.depth)
        return report
    # the search stops inside a level: its last size is partial
    finished = levels[:-1] if result.stop_reason.startswith("time") else levels
    while finished and finished[-1] == 0:
        finished = finished[:-1]
    report["finished_levels"] = len(finished)
    forecast: Optional[object] = predict(finished)
    if forecast is None:
        report["forecast"] = None
        return report
    report.update(exact=False, forecast=True, states=forecast.states, states_low=forecast.low,
                  states_high=forecast.high, depth=forecast.depth, depth_low=forecast.depth_low,
                  depth_high=forecast.depth_high, seconds=round(forecast.states / rate),
                  seconds_low=round(forecast.low / rate), seconds_high=round(forecast.high / rate))
    return report
