"""mx.nd.image: image operators (to_tensor, normalize, resize, crop, flips, random
colour jitter) generated from the registry's ``_image_*`` operators."""
