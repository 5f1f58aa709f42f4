"""Predict: which digit an 8x8 image shows, with a probability for each class.

The model is this function's secret sauce: it is trained here, at module level, once per
container (the warm-Lambda pattern), and only the prediction ever leaves the function.
No model file is downloaded or unpickled: the training data is the digits dataset that
ships inside scikit-learn (UCI "optdigits", 1,797 images of 8x8 with levels 0-16).
Every fifth image (index % 5 == 0) is held out of training, so that accuracy can be
measured on digits the model has never seen.

The classifier is an RBF support-vector machine (gamma 0.001, C 1: scikit-learn's own
digits example), with Platt scaling fitted by 5-fold cross-validation for probabilities.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_digits
from sklearn.svm import SVC

MODEL_NAME = "digits-svc-rbf"
HOLDOUT_EVERY = 5  # images with index % 5 == 0 are never trained on


def _train() -> tuple[CalibratedClassifierCV, int]:
    digits = load_digits()
    train = np.arange(len(digits.target)) % HOLDOUT_EVERY != 0
    model = CalibratedClassifierCV(SVC(gamma=0.001, C=1.0), ensemble=False, cv=5)
    model.fit(digits.data[train], digits.target[train])
    return model, int(train.sum())


_started = time.perf_counter()
_MODEL, _TRAINED_ON = _train()
_TRAINED_AT = datetime.now(UTC).isoformat(timespec="microseconds")
print(f"Predict: trained {MODEL_NAME} on {_TRAINED_ON} digits in "
      f"{time.perf_counter() - _started:.2f} s", file=sys.stderr)  # a log line, not output


class InvalidFeatures(Exception):
    """The input is not an 8x8 image with levels 0-16."""


def _features(event: dict[str, Any]) -> np.ndarray:
    values = event.get("features") if isinstance(event, dict) else None
    if not isinstance(values, list) or len(values) != 64 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 16
            for v in values):
        raise InvalidFeatures("'features' must be 64 numbers from 0 to 16 (8x8, row by row)")
    return np.asarray(values, dtype=np.float64).reshape(1, 64)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    probabilities = _MODEL.predict_proba(_features(event))[0]
    classes = [int(c) for c in _MODEL.classes_]
    best = int(np.argmax(probabilities))
    return {
        "digit": classes[best],
        "probabilities": [round(float(p), 6) for p in probabilities],
        "model": {"name": MODEL_NAME, "trained_on": _TRAINED_ON, "trained_at": _TRAINED_AT},
    }
