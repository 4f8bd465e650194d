"""Trust_BC: behavioural consistency of an answer against generated distractors (TrustScore §2.1).

What the gateway uses:

* ``scoring.consistency.assets.build_consistency_assets(settings)``: build the graph, its
  Oxigraph store and the word vectors under ``settings.data_dir`` at install time
  (``python -m scoring.consistency.assets``; not imported here, so that running it as a
  module does not import it twice);
* ``open_consistency_scorer(settings)``: an async context manager for the lifespan that
  serves the local graph (unless ``consistency.sparql_endpoint`` is set), loads the spaCy
  pipeline and vectors once and yields a ``ConsistencyScorer`` (component ``"bc"``);
* ``serve_oxigraph(store_dir, port=0)``: the embedded SPARQL server alone, yielding its
  query URL.
"""

from .distractors import Distractor, DistractorGenerator, DistractorPool
from .oxigraph import serve_oxigraph
from .runtime import open_consistency_scorer
from .scorer import ConsistencyScorer

__all__ = ["ConsistencyScorer", "Distractor", "DistractorGenerator", "DistractorPool", "open_consistency_scorer",
           "serve_oxigraph"]
