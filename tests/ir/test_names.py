"""pypto.ir.names.NameSupply: the one fresh-name supply of the frontend, builder and passes."""

from pypto.ir.names import NameSupply


def test_a_free_name_stays_and_a_clash_takes_the_first_free_suffix():
    names = NameSupply(taken={"t", "t_1"})
    assert names.fresh("u") == "u"
    assert names.fresh("t") == "t_2"
    assert names.fresh("t") == "t_3"
    assert "t_3" in names


def test_reserved_names_are_never_handed_out_but_a_user_binding_keeps_its_name():
    names = NameSupply(reserved={"x", "x_1"})
    assert names.fresh("x") == "x_2"
    supply = NameSupply(reserved={"acc"})
    assert supply.claim("acc") == "acc"  # the user's own first binding
    assert supply.claim("acc") == "acc_1"  # a rebinding
