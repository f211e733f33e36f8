"""Test infrastructure shared by the suite and by plugin authors.

`scheduler.testing.controlplane` builds and runs a real kube-apiserver + etcd
(and kube-scheduler as the reference peer) so that the same tests can run
against the real thing as well as against the built-in emulator.
"""
