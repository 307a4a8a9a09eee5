"""TorchServe's handler of an export's traced program (model.pt) for make bench's serve group: the
peer of est-serve's TensorFlow Serving :predict on the same TorchScript file. Each request's body
is that :predict row format, {"instances": [example, ...]} (the program's one input); the requests
TorchServe batches run in one call of the program, and each gets {"predictions": ...} of its own
rows: every output's values, by name."""

import json

import torch
from ts.torch_handler.base_handler import BaseHandler


class ExportHandler(BaseHandler):
    """Loads model.pt with torch.jit.load (BaseHandler's TorchScript path) and runs it."""

    def preprocess(self, data):
        batches = []
        for request in data:
            body = request.get("body") or request.get("data")
            if isinstance(body, (bytes, bytearray)):
                body = json.loads(body)
            batches.append(torch.tensor(body["instances"], dtype=torch.float32))
        self.rows = [batch.shape[0] for batch in batches]
        return torch.cat(batches)

    def inference(self, data, *args, **kwargs):
        with torch.inference_mode():
            return self.model(data)

    def postprocess(self, data):
        answers, start = [], 0
        for rows in self.rows:
            answers.append({"predictions": {name: tensor[start:start + rows].tolist() for name, tensor in data.items()}})
            start += rows
        return answers
