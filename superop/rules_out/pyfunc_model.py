"""MLflow "models from code" entry of the catalog model (copied into every logged model;
MLflow runs it at load time). The code itself lives in superop.rules_out.pyfunc."""
import mlflow

from superop.rules_out.pyfunc import CatalogModel

mlflow.models.set_model(CatalogModel())
