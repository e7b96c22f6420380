import pytest
import torch


@pytest.fixture
def one_thread():
    """One torch thread for the bench tests: tiny problems, and steady on a busy machine; restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
