"""``trustgate calibrate``: refit each model's learned Trust_OV now, from the labels in the config's record store.

The same refit a running gateway makes every ``refit_every`` labels
(``scoring.learning``), on the same store and into the same fit store, so a
gateway sharing them (the embedded store's file, or Redis) uses the new fit for
its next records without a restart. Models without a label are left alone.
"""

from __future__ import annotations

import contextlib

from prometheus_client import CollectorRegistry

from exporters import build_metrics
from exporters.calibration_metrics import build_calibration_metrics
from scoring import CalibrationReport

from .assembly import build_fit_store, build_learner, build_publisher, load_calibrator, open_redis
from .config.settings import ConfigError, GatewaySettings

__all__ = ["calibrate", "describe_report"]


async def calibrate(settings: GatewaySettings, models: list[str] | None = None) -> list[CalibrationReport]:
    """The new report of each model group (``models``, or every configured one) that has labels."""
    metrics = build_metrics(CollectorRegistry())
    async with contextlib.AsyncExitStack() as stack:
        redis = await open_redis(settings, stack)
        fits = build_fit_store(settings, redis)
        if fits is None:
            raise ConfigError("learning is off (trustgate.scoring.feedback.learn: false): nothing to calibrate")
        store = (await build_publisher(settings, metrics, redis, stack)).store
        learner = build_learner(
            settings, store, fits, load_calibrator(settings), build_calibration_metrics(metrics.registry), stack
        )
        reports = []
        for model in models or list(settings.model_groups()):
            if await store.labelled(model, limit=1):
                reports.append(await learner.refit(model))
        return reports


def describe_report(report: CalibrationReport) -> str:
    """One line per model: labels, the combination its records get and why, the headline AUROCs."""
    auroc = report.auroc()
    figures = ", ".join(f"{name} {value:.3f}" for name, value in auroc.items() if value is not None)
    informative = {True: "informative", False: "NOT informative", None: "too few labels to tell"}[report.informative]
    return (
        f"{report.model}: {report.labels} labels ({report.positives} correct), {report.combination} combination "
        f"({report.reason}); {informative}; AUROC {figures or 'undefined'}"
    )
