"""Trust_BC: behavioural consistency of an answer against generated distractors (TrustScore §2.1).

What the gateway uses:

* ``scoring.consistency.assets.build_consistency_assets(settings)``: build the graph, its
  Oxigraph store and the word vectors under ``settings.data_dir`` at install time
  (``python -m scoring.consistency.assets``; not imported here, so that running it as a
  module does not import it twice);
* ``local_sparql_endpoint(settings)``: an async context manager for the lifespan that
  serves the local graph (unless ``consistency.sparql_endpoint`` is set) and yields its URL;
* ``load_generator(settings, endpoint)``: the spaCy pipeline, vectors and graph client, loaded
  once where scoring's CPU work runs (``scoring.cpu_pool``);
* ``ConsistencyScorer(settings.consistency, cpu)``: the scorer (component ``"bc"``), which has
  its distractors generated through ``cpu`` (a ``scoring.cpu_pool.CpuWork``);
* ``serve_oxigraph(store_dir, port=0)``: the embedded SPARQL server alone, yielding its
  query URL.
"""

from . import thinc_backend  # noqa: F401  (first: spaCy then finds thinc loaded without torch)
from .distractors import Distractor, DistractorGenerator, DistractorPool
from .oxigraph import serve_oxigraph
from .runtime import load_generator, local_sparql_endpoint
from .scorer import ConsistencyScorer

__all__ = [
    "ConsistencyScorer",
    "Distractor",
    "DistractorGenerator",
    "DistractorPool",
    "load_generator",
    "local_sparql_endpoint",
    "serve_oxigraph",
]
