"""mx.kvstore.KVStoreServer: present as in MXNet; running a server says it is missing."""
import pytest

import mxnet as mx


def test_server_wraps_a_store_and_run_names_what_is_missing():
    srv = mx.kvstore.KVStoreServer(mx.kv.create("local"))
    with pytest.raises(NotImplementedError, match="KVStoreServer.run"):
        srv.run()
    with pytest.raises(TypeError, match="KVStore"):
        mx.kvstore.KVStoreServer("local")
