"""The paper's published numbers (gradient-update-alignment.tex), as data: no torch.

Transcribed from the LaTeX source; each entry names its source line (the line number in
``gradient-update-alignment.tex`` of the table row).  Keys use pinnspec's names: problems
``schrodinger, burgers, heat_ms, kovasznay, beltrami, poisson5d``; groupings ``two`` (2-loss),
``three`` (3-loss); optimizers ``sgd, msgd, rmsprop, adam, adamw, sophiag, adahessian, soap``;
surgery methods ``none`` (the paper's "Adam" row: no surgery), ``pcgrad, cagrad, imtlg, amtl, upgrad,
config``; align ``none`` (base) or ``gua`` (+GUA).  Conflict rates are in percent, as printed.
"""

from __future__ import annotations

PAPER = "gradient-update-alignment.tex"

#: GUM (Q1): ConFIG x optimizer, no alignment.  (problem, grouping, optimizer) -> (R_g, R_a, R_u) in %.
#: Table tab:optimizer_gum (main text; Schroedinger, Burgers, Heat-MS) and
#: Table tab:optimizer_sources_remaining (Appendix E.3, app:additional_optimizer_gum; Kovasznay,
#: Beltrami, Poisson-5D).
GUM: dict[tuple[str, str, str], tuple[float, float, float]] = {
    ('schrodinger', 'two', 'sgd'): (100.0, 0.0, 0.0),  # tab:optimizer_gum, line 488
    ('schrodinger', 'three', 'sgd'): (100.0, 0.0, 0.0),  # tab:optimizer_gum, line 488
    ('burgers', 'two', 'sgd'): (99.7, 0.0, 0.0),  # tab:optimizer_gum, line 488
    ('burgers', 'three', 'sgd'): (99.9, 0.0, 0.0),  # tab:optimizer_gum, line 488
    ('heat_ms', 'two', 'sgd'): (70.1, 0.0, 0.0),  # tab:optimizer_gum, line 488
    ('heat_ms', 'three', 'sgd'): (99.0, 0.0, 0.0),  # tab:optimizer_gum, line 488
    ('schrodinger', 'two', 'msgd'): (99.8, 0.0, 82.3),  # tab:optimizer_gum, line 489
    ('schrodinger', 'three', 'msgd'): (99.8, 0.0, 81.6),  # tab:optimizer_gum, line 489
    ('burgers', 'two', 'msgd'): (99.9, 0.0, 80.5),  # tab:optimizer_gum, line 489
    ('burgers', 'three', 'msgd'): (100.0, 0.0, 86.3),  # tab:optimizer_gum, line 489
    ('heat_ms', 'two', 'msgd'): (58.6, 0.0, 51.3),  # tab:optimizer_gum, line 489
    ('heat_ms', 'three', 'msgd'): (95.5, 0.0, 72.7),  # tab:optimizer_gum, line 489
    ('schrodinger', 'two', 'rmsprop'): (78.7, 0.0, 1.8),  # tab:optimizer_gum, line 490
    ('schrodinger', 'three', 'rmsprop'): (83.3, 0.0, 18.8),  # tab:optimizer_gum, line 490
    ('burgers', 'two', 'rmsprop'): (58.4, 0.0, 6.1),  # tab:optimizer_gum, line 490
    ('burgers', 'three', 'rmsprop'): (87.1, 0.0, 24.7),  # tab:optimizer_gum, line 490
    ('heat_ms', 'two', 'rmsprop'): (27.7, 0.0, 0.0),  # tab:optimizer_gum, line 490
    ('heat_ms', 'three', 'rmsprop'): (72.8, 0.0, 5.5),  # tab:optimizer_gum, line 490
    ('schrodinger', 'two', 'adam'): (40.8, 0.0, 23.7),  # tab:optimizer_gum, line 491
    ('schrodinger', 'three', 'adam'): (56.3, 0.0, 35.2),  # tab:optimizer_gum, line 491
    ('burgers', 'two', 'adam'): (30.5, 0.0, 29.4),  # tab:optimizer_gum, line 491
    ('burgers', 'three', 'adam'): (73.7, 0.0, 57.4),  # tab:optimizer_gum, line 491
    ('heat_ms', 'two', 'adam'): (22.8, 0.0, 12.8),  # tab:optimizer_gum, line 491
    ('heat_ms', 'three', 'adam'): (81.3, 0.0, 64.6),  # tab:optimizer_gum, line 491
    ('schrodinger', 'two', 'adamw'): (46.5, 0.0, 26.3),  # tab:optimizer_gum, line 492
    ('schrodinger', 'three', 'adamw'): (62.0, 0.0, 35.9),  # tab:optimizer_gum, line 492
    ('burgers', 'two', 'adamw'): (30.1, 0.0, 29.9),  # tab:optimizer_gum, line 492
    ('burgers', 'three', 'adamw'): (74.0, 0.0, 55.5),  # tab:optimizer_gum, line 492
    ('heat_ms', 'two', 'adamw'): (25.0, 0.0, 15.6),  # tab:optimizer_gum, line 492
    ('heat_ms', 'three', 'adamw'): (80.7, 0.0, 63.8),  # tab:optimizer_gum, line 492
    ('schrodinger', 'two', 'sophiag'): (91.7, 0.0, 36.3),  # tab:optimizer_gum, line 495
    ('schrodinger', 'three', 'sophiag'): (96.3, 0.0, 69.5),  # tab:optimizer_gum, line 495
    ('burgers', 'two', 'sophiag'): (76.9, 0.0, 42.8),  # tab:optimizer_gum, line 495
    ('burgers', 'three', 'sophiag'): (96.9, 0.0, 66.4),  # tab:optimizer_gum, line 495
    ('heat_ms', 'two', 'sophiag'): (33.9, 0.0, 42.4),  # tab:optimizer_gum, line 495
    ('heat_ms', 'three', 'sophiag'): (80.7, 0.0, 73.2),  # tab:optimizer_gum, line 495
    ('schrodinger', 'two', 'adahessian'): (99.7, 0.0, 27.2),  # tab:optimizer_gum, line 496
    ('schrodinger', 'three', 'adahessian'): (99.7, 0.0, 16.9),  # tab:optimizer_gum, line 496
    ('burgers', 'two', 'adahessian'): (99.4, 0.0, 43.9),  # tab:optimizer_gum, line 496
    ('burgers', 'three', 'adahessian'): (99.9, 0.0, 70.9),  # tab:optimizer_gum, line 496
    ('heat_ms', 'two', 'adahessian'): (75.2, 0.0, 40.9),  # tab:optimizer_gum, line 496
    ('heat_ms', 'three', 'adahessian'): (99.8, 0.0, 57.1),  # tab:optimizer_gum, line 496
    ('schrodinger', 'two', 'soap'): (25.3, 0.0, 17.3),  # tab:optimizer_gum, line 497
    ('schrodinger', 'three', 'soap'): (63.3, 0.0, 37.6),  # tab:optimizer_gum, line 497
    ('burgers', 'two', 'soap'): (25.5, 0.0, 27.5),  # tab:optimizer_gum, line 497
    ('burgers', 'three', 'soap'): (68.1, 0.0, 57.2),  # tab:optimizer_gum, line 497
    ('heat_ms', 'two', 'soap'): (33.9, 0.0, 14.4),  # tab:optimizer_gum, line 497
    ('heat_ms', 'three', 'soap'): (64.9, 0.0, 45.1),  # tab:optimizer_gum, line 497
    ('kovasznay', 'two', 'sgd'): (100.0, 0.0, 0.0),  # tab:optimizer_sources_remaining, line 2287
    ('beltrami', 'two', 'sgd'): (100.0, 0.0, 0.0),  # tab:optimizer_sources_remaining, line 2287
    ('beltrami', 'three', 'sgd'): (100.0, 0.0, 0.0),  # tab:optimizer_sources_remaining, line 2287
    ('poisson5d', 'two', 'sgd'): (87.9, 0.0, 0.0),  # tab:optimizer_sources_remaining, line 2287
    ('kovasznay', 'two', 'msgd'): (99.9, 0.0, 53.3),  # tab:optimizer_sources_remaining, line 2288
    ('beltrami', 'two', 'msgd'): (79.0, 0.0, 22.9),  # tab:optimizer_sources_remaining, line 2288
    ('beltrami', 'three', 'msgd'): (90.3, 0.0, 43.2),  # tab:optimizer_sources_remaining, line 2288
    ('poisson5d', 'two', 'msgd'): (64.9, 0.0, 41.9),  # tab:optimizer_sources_remaining, line 2288
    ('kovasznay', 'two', 'rmsprop'): (10.0, 0.0, 1.7),  # tab:optimizer_sources_remaining, line 2289
    ('beltrami', 'two', 'rmsprop'): (3.3, 0.0, 0.0),  # tab:optimizer_sources_remaining, line 2289
    ('beltrami', 'three', 'rmsprop'): (32.5, 0.0, 0.9),  # tab:optimizer_sources_remaining, line 2289
    ('poisson5d', 'two', 'rmsprop'): (81.9, 0.0, 0.2),  # tab:optimizer_sources_remaining, line 2289
    ('kovasznay', 'two', 'adam'): (5.5, 0.0, 6.4),  # tab:optimizer_sources_remaining, line 2290
    ('beltrami', 'two', 'adam'): (13.1, 0.0, 11.6),  # tab:optimizer_sources_remaining, line 2290
    ('beltrami', 'three', 'adam'): (27.5, 0.0, 16.8),  # tab:optimizer_sources_remaining, line 2290
    ('poisson5d', 'two', 'adam'): (52.6, 0.0, 30.5),  # tab:optimizer_sources_remaining, line 2290
    ('kovasznay', 'two', 'adamw'): (8.9, 0.0, 8.4),  # tab:optimizer_sources_remaining, line 2291
    ('beltrami', 'two', 'adamw'): (14.6, 0.0, 10.7),  # tab:optimizer_sources_remaining, line 2291
    ('beltrami', 'three', 'adamw'): (29.0, 0.0, 17.4),  # tab:optimizer_sources_remaining, line 2291
    ('poisson5d', 'two', 'adamw'): (52.9, 0.0, 32.6),  # tab:optimizer_sources_remaining, line 2291
    ('kovasznay', 'two', 'sophiag'): (55.6, 0.0, 42.9),  # tab:optimizer_sources_remaining, line 2294
    ('beltrami', 'two', 'sophiag'): (54.1, 0.0, 20.2),  # tab:optimizer_sources_remaining, line 2294
    ('beltrami', 'three', 'sophiag'): (63.0, 0.0, 29.4),  # tab:optimizer_sources_remaining, line 2294
    ('poisson5d', 'two', 'sophiag'): (27.2, 0.0, 13.0),  # tab:optimizer_sources_remaining, line 2294
    ('kovasznay', 'two', 'adahessian'): (99.9, 0.0, 36.8),  # tab:optimizer_sources_remaining, line 2295
    ('beltrami', 'two', 'adahessian'): (99.9, 0.0, 53.2),  # tab:optimizer_sources_remaining, line 2295
    ('beltrami', 'three', 'adahessian'): (99.9, 0.0, 57.7),  # tab:optimizer_sources_remaining, line 2295
    ('poisson5d', 'two', 'adahessian'): (98.8, 0.0, 8.5),  # tab:optimizer_sources_remaining, line 2295
    ('kovasznay', 'two', 'soap'): (3.3, 0.0, 5.8),  # tab:optimizer_sources_remaining, line 2296
    ('beltrami', 'two', 'soap'): (20.9, 0.0, 8.8),  # tab:optimizer_sources_remaining, line 2296
    ('beltrami', 'three', 'soap'): (28.6, 0.0, 12.3),  # tab:optimizer_sources_remaining, line 2296
    ('poisson5d', 'two', 'soap'): (44.5, 0.0, 30.8),  # tab:optimizer_sources_remaining, line 2296
}

#: Q2 relative L2 error: (problem, grouping, method, align) -> (mean, sample std over five seeds, Imp. %).
#: Imp. = 100 (1 - E_GUA / E_base) is given on the +GUA rows, None on the base rows.
#: Table tab:full_q2_results (= tab:main_results), Appendix E.4.
Q2_L2: dict[tuple[str, str, str, str], tuple[float, float, float | None]] = {
    ('schrodinger', 'two', 'none', 'none'): (0.0315, 0.011, None),  # tab:full_q2_results, line 2336
    ('schrodinger', 'three', 'none', 'none'): (0.0315, 0.011, None),  # tab:full_q2_results, line 2336
    ('burgers', 'two', 'none', 'none'): (0.00455, 0.00103, None),  # tab:full_q2_results, line 2336
    ('burgers', 'three', 'none', 'none'): (0.00307, 0.00137, None),  # tab:full_q2_results, line 2336
    ('kovasznay', 'two', 'none', 'none'): (0.000469, 7.44e-05, None),  # tab:full_q2_results, line 2336
    ('schrodinger', 'two', 'none', 'gua'): (0.0174, 0.00419, 44.8),  # tab:full_q2_results, line 2337
    ('schrodinger', 'three', 'none', 'gua'): (0.0242, 0.00659, 23.2),  # tab:full_q2_results, line 2337
    ('burgers', 'two', 'none', 'gua'): (0.00118, 0.000586, 74.1),  # tab:full_q2_results, line 2337
    ('burgers', 'three', 'none', 'gua'): (0.000777, 0.000335, 74.7),  # tab:full_q2_results, line 2337
    ('kovasznay', 'two', 'none', 'gua'): (0.000346, 1.53e-05, 26.2),  # tab:full_q2_results, line 2337
    ('schrodinger', 'two', 'pcgrad', 'none'): (0.0251, 0.00778, None),  # tab:full_q2_results, line 2339
    ('schrodinger', 'three', 'pcgrad', 'none'): (0.0212, 0.00521, None),  # tab:full_q2_results, line 2339
    ('burgers', 'two', 'pcgrad', 'none'): (0.00305, 0.000731, None),  # tab:full_q2_results, line 2339
    ('burgers', 'three', 'pcgrad', 'none'): (0.00202, 0.000811, None),  # tab:full_q2_results, line 2339
    ('kovasznay', 'two', 'pcgrad', 'none'): (0.000482, 0.000102, None),  # tab:full_q2_results, line 2339
    ('schrodinger', 'two', 'pcgrad', 'gua'): (0.0146, 0.00152, 41.8),  # tab:full_q2_results, line 2340
    ('schrodinger', 'three', 'pcgrad', 'gua'): (0.0101, 0.000811, 52.4),  # tab:full_q2_results, line 2340
    ('burgers', 'two', 'pcgrad', 'gua'): (0.000835, 0.000132, 72.6),  # tab:full_q2_results, line 2340
    ('burgers', 'three', 'pcgrad', 'gua'): (0.000761, 0.000181, 62.3),  # tab:full_q2_results, line 2340
    ('kovasznay', 'two', 'pcgrad', 'gua'): (0.000326, 7.42e-05, 32.4),  # tab:full_q2_results, line 2340
    ('schrodinger', 'two', 'cagrad', 'none'): (0.014, 0.00153, None),  # tab:full_q2_results, line 2342
    ('schrodinger', 'three', 'cagrad', 'none'): (0.02, 0.00506, None),  # tab:full_q2_results, line 2342
    ('burgers', 'two', 'cagrad', 'none'): (0.0017, 0.000436, None),  # tab:full_q2_results, line 2342
    ('burgers', 'three', 'cagrad', 'none'): (0.00225, 0.00049, None),  # tab:full_q2_results, line 2342
    ('kovasznay', 'two', 'cagrad', 'none'): (0.000478, 4.76e-05, None),  # tab:full_q2_results, line 2342
    ('schrodinger', 'two', 'cagrad', 'gua'): (0.0118, 0.000877, 15.7),  # tab:full_q2_results, line 2343
    ('schrodinger', 'three', 'cagrad', 'gua'): (0.0108, 0.00192, 46.0),  # tab:full_q2_results, line 2343
    ('burgers', 'two', 'cagrad', 'gua'): (0.000697, 0.000126, 59.0),  # tab:full_q2_results, line 2343
    ('burgers', 'three', 'cagrad', 'gua'): (0.000739, 5.89e-05, 67.2),  # tab:full_q2_results, line 2343
    ('kovasznay', 'two', 'cagrad', 'gua'): (0.000111, 3.12e-05, 76.8),  # tab:full_q2_results, line 2343
    ('schrodinger', 'two', 'imtlg', 'none'): (0.0412, 0.0109, None),  # tab:full_q2_results, line 2345
    ('schrodinger', 'three', 'imtlg', 'none'): (0.56, 0.312, None),  # tab:full_q2_results, line 2345
    ('burgers', 'two', 'imtlg', 'none'): (0.00251, 0.000824, None),  # tab:full_q2_results, line 2345
    ('burgers', 'three', 'imtlg', 'none'): (0.0583, 0.0366, None),  # tab:full_q2_results, line 2345
    ('kovasznay', 'two', 'imtlg', 'none'): (0.000179, 2.83e-05, None),  # tab:full_q2_results, line 2345
    ('schrodinger', 'two', 'imtlg', 'gua'): (0.0321, 0.00186, 22.1),  # tab:full_q2_results, line 2346
    ('schrodinger', 'three', 'imtlg', 'gua'): (0.102, 0.0591, 81.8),  # tab:full_q2_results, line 2346
    ('burgers', 'two', 'imtlg', 'gua'): (0.000682, 6.76e-05, 72.8),  # tab:full_q2_results, line 2346
    ('burgers', 'three', 'imtlg', 'gua'): (0.00514, 0.00107, 91.2),  # tab:full_q2_results, line 2346
    ('kovasznay', 'two', 'imtlg', 'gua'): (9.25e-05, 1.03e-05, 48.3),  # tab:full_q2_results, line 2346
    ('schrodinger', 'two', 'amtl', 'none'): (0.016, 0.00187, None),  # tab:full_q2_results, line 2348
    ('schrodinger', 'three', 'amtl', 'none'): (0.03, 0.00378, None),  # tab:full_q2_results, line 2348
    ('burgers', 'two', 'amtl', 'none'): (0.00295, 0.000524, None),  # tab:full_q2_results, line 2348
    ('burgers', 'three', 'amtl', 'none'): (0.00731, 0.00289, None),  # tab:full_q2_results, line 2348
    ('kovasznay', 'two', 'amtl', 'none'): (0.000183, 1.56e-05, None),  # tab:full_q2_results, line 2348
    ('schrodinger', 'two', 'amtl', 'gua'): (0.0123, 0.00293, 23.1),  # tab:full_q2_results, line 2349
    ('schrodinger', 'three', 'amtl', 'gua'): (0.0215, 0.00418, 28.3),  # tab:full_q2_results, line 2349
    ('burgers', 'two', 'amtl', 'gua'): (0.00105, 0.000272, 64.4),  # tab:full_q2_results, line 2349
    ('burgers', 'three', 'amtl', 'gua'): (0.00156, 0.000334, 78.7),  # tab:full_q2_results, line 2349
    ('kovasznay', 'two', 'amtl', 'gua'): (0.000156, 2.17e-05, 14.8),  # tab:full_q2_results, line 2349
    ('schrodinger', 'two', 'upgrad', 'none'): (0.0256, 0.0072, None),  # tab:full_q2_results, line 2351
    ('schrodinger', 'three', 'upgrad', 'none'): (0.0198, 0.0041, None),  # tab:full_q2_results, line 2351
    ('burgers', 'two', 'upgrad', 'none'): (0.00303, 0.000496, None),  # tab:full_q2_results, line 2351
    ('burgers', 'three', 'upgrad', 'none'): (0.00308, 0.00146, None),  # tab:full_q2_results, line 2351
    ('kovasznay', 'two', 'upgrad', 'none'): (0.000449, 6.56e-05, None),  # tab:full_q2_results, line 2351
    ('schrodinger', 'two', 'upgrad', 'gua'): (0.0152, 0.00212, 40.6),  # tab:full_q2_results, line 2352
    ('schrodinger', 'three', 'upgrad', 'gua'): (0.011, 0.0011, 44.4),  # tab:full_q2_results, line 2352
    ('burgers', 'two', 'upgrad', 'gua'): (0.000768, 0.000112, 74.7),  # tab:full_q2_results, line 2352
    ('burgers', 'three', 'upgrad', 'gua'): (0.000969, 0.00018, 68.5),  # tab:full_q2_results, line 2352
    ('kovasznay', 'two', 'upgrad', 'gua'): (0.000323, 7.83e-05, 28.1),  # tab:full_q2_results, line 2352
    ('schrodinger', 'two', 'config', 'none'): (0.0189, 0.00546, None),  # tab:full_q2_results, line 2354
    ('schrodinger', 'three', 'config', 'none'): (0.0233, 0.00789, None),  # tab:full_q2_results, line 2354
    ('burgers', 'two', 'config', 'none'): (0.00174, 0.000338, None),  # tab:full_q2_results, line 2354
    ('burgers', 'three', 'config', 'none'): (0.00348, 0.00083, None),  # tab:full_q2_results, line 2354
    ('kovasznay', 'two', 'config', 'none'): (0.000186, 4.02e-05, None),  # tab:full_q2_results, line 2354
    ('schrodinger', 'two', 'config', 'gua'): (0.0138, 0.00235, 27.0),  # tab:full_q2_results, line 2355
    ('schrodinger', 'three', 'config', 'gua'): (0.0133, 0.00169, 42.9),  # tab:full_q2_results, line 2355
    ('burgers', 'two', 'config', 'gua'): (0.00065, 0.000127, 62.6),  # tab:full_q2_results, line 2355
    ('burgers', 'three', 'config', 'gua'): (0.00134, 0.000131, 61.5),  # tab:full_q2_results, line 2355
    ('kovasznay', 'two', 'config', 'gua'): (9.84e-05, 1.9e-05, 47.1),  # tab:full_q2_results, line 2355
    ('heat_ms', 'two', 'none', 'none'): (0.0173, 0.00458, None),  # tab:full_q2_results, line 2370
    ('heat_ms', 'three', 'none', 'none'): (0.157, 0.0651, None),  # tab:full_q2_results, line 2370
    ('beltrami', 'two', 'none', 'none'): (0.0065, 0.000314, None),  # tab:full_q2_results, line 2370
    ('beltrami', 'three', 'none', 'none'): (0.00526, 0.000284, None),  # tab:full_q2_results, line 2370
    ('poisson5d', 'two', 'none', 'none'): (0.000595, 3.22e-05, None),  # tab:full_q2_results, line 2370
    ('heat_ms', 'two', 'none', 'gua'): (0.0146, 0.00135, 15.6),  # tab:full_q2_results, line 2371
    ('heat_ms', 'three', 'none', 'gua'): (0.0347, 0.00715, 77.9),  # tab:full_q2_results, line 2371
    ('beltrami', 'two', 'none', 'gua'): (0.00506, 0.000176, 22.2),  # tab:full_q2_results, line 2371
    ('beltrami', 'three', 'none', 'gua'): (0.0039, 0.000223, 25.9),  # tab:full_q2_results, line 2371
    ('poisson5d', 'two', 'none', 'gua'): (0.000394, 3.25e-05, 33.8),  # tab:full_q2_results, line 2371
    ('heat_ms', 'two', 'pcgrad', 'none'): (0.0205, 0.00436, None),  # tab:full_q2_results, line 2373
    ('heat_ms', 'three', 'pcgrad', 'none'): (0.34, 0.134, None),  # tab:full_q2_results, line 2373
    ('beltrami', 'two', 'pcgrad', 'none'): (0.0067, 0.000475, None),  # tab:full_q2_results, line 2373
    ('beltrami', 'three', 'pcgrad', 'none'): (0.00526, 0.000296, None),  # tab:full_q2_results, line 2373
    ('poisson5d', 'two', 'pcgrad', 'none'): (0.000588, 4.29e-05, None),  # tab:full_q2_results, line 2373
    ('heat_ms', 'two', 'pcgrad', 'gua'): (0.0135, 0.0044, 34.1),  # tab:full_q2_results, line 2374
    ('heat_ms', 'three', 'pcgrad', 'gua'): (0.0494, 0.0143, 85.5),  # tab:full_q2_results, line 2374
    ('beltrami', 'two', 'pcgrad', 'gua'): (0.00522, 0.000312, 22.1),  # tab:full_q2_results, line 2374
    ('beltrami', 'three', 'pcgrad', 'gua'): (0.00418, 0.000307, 20.5),  # tab:full_q2_results, line 2374
    ('poisson5d', 'two', 'pcgrad', 'gua'): (0.000338, 2.34e-05, 42.5),  # tab:full_q2_results, line 2374
    ('heat_ms', 'two', 'cagrad', 'none'): (0.0319, 0.00827, None),  # tab:full_q2_results, line 2376
    ('heat_ms', 'three', 'cagrad', 'none'): (0.626, 0.0433, None),  # tab:full_q2_results, line 2376
    ('beltrami', 'two', 'cagrad', 'none'): (0.00413, 0.000269, None),  # tab:full_q2_results, line 2376
    ('beltrami', 'three', 'cagrad', 'none'): (0.00391, 0.000178, None),  # tab:full_q2_results, line 2376
    ('poisson5d', 'two', 'cagrad', 'none'): (0.000428, 0.000302, None),  # tab:full_q2_results, line 2376
    ('heat_ms', 'two', 'cagrad', 'gua'): (0.0113, 0.00308, 64.6),  # tab:full_q2_results, line 2377
    ('heat_ms', 'three', 'cagrad', 'gua'): (0.146, 0.0481, 76.7),  # tab:full_q2_results, line 2377
    ('beltrami', 'two', 'cagrad', 'gua'): (0.0031, 0.000168, 24.9),  # tab:full_q2_results, line 2377
    ('beltrami', 'three', 'cagrad', 'gua'): (0.00296, 9.99e-05, 24.3),  # tab:full_q2_results, line 2377
    ('poisson5d', 'two', 'cagrad', 'gua'): (0.000137, 2.07e-05, 68.0),  # tab:full_q2_results, line 2377
    ('heat_ms', 'two', 'imtlg', 'none'): (0.882, 0.226, None),  # tab:full_q2_results, line 2379
    ('heat_ms', 'three', 'imtlg', 'none'): (1.0, 0.000556, None),  # tab:full_q2_results, line 2379
    ('beltrami', 'two', 'imtlg', 'none'): (0.00383, 0.00028, None),  # tab:full_q2_results, line 2379
    ('beltrami', 'three', 'imtlg', 'none'): (0.00658, 0.00173, None),  # tab:full_q2_results, line 2379
    ('poisson5d', 'two', 'imtlg', 'none'): (0.000494, 0.000194, None),  # tab:full_q2_results, line 2379
    ('heat_ms', 'two', 'imtlg', 'gua'): (0.0163, 0.00328, 98.2),  # tab:full_q2_results, line 2380
    ('heat_ms', 'three', 'imtlg', 'gua'): (0.326, 0.153, 67.4),  # tab:full_q2_results, line 2380
    ('beltrami', 'two', 'imtlg', 'gua'): (0.00292, 0.000176, 23.8),  # tab:full_q2_results, line 2380
    ('beltrami', 'three', 'imtlg', 'gua'): (0.00319, 0.000229, 51.5),  # tab:full_q2_results, line 2380
    ('poisson5d', 'two', 'imtlg', 'gua'): (0.000144, 9.57e-06, 70.9),  # tab:full_q2_results, line 2380
    ('heat_ms', 'two', 'amtl', 'none'): (0.0761, 0.0373, None),  # tab:full_q2_results, line 2382
    ('heat_ms', 'three', 'amtl', 'none'): (0.771, 0.0392, None),  # tab:full_q2_results, line 2382
    ('beltrami', 'two', 'amtl', 'none'): (0.00406, 0.000226, None),  # tab:full_q2_results, line 2382
    ('beltrami', 'three', 'amtl', 'none'): (0.00319, 0.000205, None),  # tab:full_q2_results, line 2382
    ('poisson5d', 'two', 'amtl', 'none'): (0.000516, 0.000259, None),  # tab:full_q2_results, line 2382
    ('heat_ms', 'two', 'amtl', 'gua'): (0.0231, 0.00788, 69.6),  # tab:full_q2_results, line 2383
    ('heat_ms', 'three', 'amtl', 'gua'): (0.147, 0.051, 80.9),  # tab:full_q2_results, line 2383
    ('beltrami', 'two', 'amtl', 'gua'): (0.00299, 0.000201, 26.4),  # tab:full_q2_results, line 2383
    ('beltrami', 'three', 'amtl', 'gua'): (0.00282, 0.000118, 11.6),  # tab:full_q2_results, line 2383
    ('poisson5d', 'two', 'amtl', 'gua'): (0.000293, 0.000193, 43.2),  # tab:full_q2_results, line 2383
    ('heat_ms', 'two', 'upgrad', 'none'): (0.0205, 0.00471, None),  # tab:full_q2_results, line 2385
    ('heat_ms', 'three', 'upgrad', 'none'): (0.32, 0.193, None),  # tab:full_q2_results, line 2385
    ('beltrami', 'two', 'upgrad', 'none'): (0.00673, 0.00037, None),  # tab:full_q2_results, line 2385
    ('beltrami', 'three', 'upgrad', 'none'): (0.00515, 0.000298, None),  # tab:full_q2_results, line 2385
    ('poisson5d', 'two', 'upgrad', 'none'): (0.000593, 3.44e-05, None),  # tab:full_q2_results, line 2385
    ('heat_ms', 'two', 'upgrad', 'gua'): (0.0159, 0.00136, 22.4),  # tab:full_q2_results, line 2386
    ('heat_ms', 'three', 'upgrad', 'gua'): (0.0462, 0.0083, 85.6),  # tab:full_q2_results, line 2386
    ('beltrami', 'two', 'upgrad', 'gua'): (0.00514, 0.000332, 23.6),  # tab:full_q2_results, line 2386
    ('beltrami', 'three', 'upgrad', 'gua'): (0.00426, 0.000179, 17.3),  # tab:full_q2_results, line 2386
    ('poisson5d', 'two', 'upgrad', 'gua'): (0.000352, 2.73e-05, 40.6),  # tab:full_q2_results, line 2386
    ('heat_ms', 'two', 'config', 'none'): (0.0577, 0.0131, None),  # tab:full_q2_results, line 2388
    ('heat_ms', 'three', 'config', 'none'): (0.816, 0.0298, None),  # tab:full_q2_results, line 2388
    ('beltrami', 'two', 'config', 'none'): (0.00401, 0.000275, None),  # tab:full_q2_results, line 2388
    ('beltrami', 'three', 'config', 'none'): (0.00411, 0.000145, None),  # tab:full_q2_results, line 2388
    ('poisson5d', 'two', 'config', 'none'): (0.000316, 0.000294, None),  # tab:full_q2_results, line 2388
    ('heat_ms', 'two', 'config', 'gua'): (0.00985, 0.00156, 82.9),  # tab:full_q2_results, line 2389
    ('heat_ms', 'three', 'config', 'gua'): (0.145, 0.0918, 82.2),  # tab:full_q2_results, line 2389
    ('beltrami', 'two', 'config', 'gua'): (0.00292, 0.00018, 27.2),  # tab:full_q2_results, line 2389
    ('beltrami', 'three', 'config', 'gua'): (0.00282, 0.000182, 31.4),  # tab:full_q2_results, line 2389
    ('poisson5d', 'two', 'config', 'gua'): (0.00014, 2.76e-05, 55.7),  # tab:full_q2_results, line 2389
}

#: Q2 conflict rates (%): (problem, grouping, method, align) -> (R_g, R_a, R_u, R_p), averaged over five
#: seeds; R_p is None on the base rows (no projection).  Table tab:pinn_conflict_rates, Appendix E.4.
Q2_RATES: dict[tuple[str, str, str, str], tuple[float, float, float, float | None]] = {
    ('schrodinger', 'two', 'none', 'none'): (44.3, 15.9, 13.2, None),  # tab:pinn_conflict_rates, line 2430
    ('schrodinger', 'three', 'none', 'none'): (65.2, 38.2, 35.2, None),  # tab:pinn_conflict_rates, line 2430
    ('burgers', 'two', 'none', 'none'): (28.5, 20.0, 22.6, None),  # tab:pinn_conflict_rates, line 2430
    ('burgers', 'three', 'none', 'none'): (55.4, 36.1, 34.0, None),  # tab:pinn_conflict_rates, line 2430
    ('kovasznay', 'two', 'none', 'none'): (3.0, 1.3, 1.2, None),  # tab:pinn_conflict_rates, line 2430
    ('schrodinger', 'two', 'none', 'gua'): (36.4, 13.1, 13.6, 0.0),  # tab:pinn_conflict_rates, line 2431
    ('schrodinger', 'three', 'none', 'gua'): (61.5, 35.6, 42.1, 0.0),  # tab:pinn_conflict_rates, line 2431
    ('burgers', 'two', 'none', 'gua'): (20.0, 14.2, 11.6, 0.0),  # tab:pinn_conflict_rates, line 2431
    ('burgers', 'three', 'none', 'gua'): (35.9, 23.2, 15.9, 0.0),  # tab:pinn_conflict_rates, line 2431
    ('kovasznay', 'two', 'none', 'gua'): (0.9, 0.3, 0.3, 0.0),  # tab:pinn_conflict_rates, line 2431
    ('schrodinger', 'two', 'pcgrad', 'none'): (36.3, 0.0, 6.3, None),  # tab:pinn_conflict_rates, line 2433
    ('schrodinger', 'three', 'pcgrad', 'none'): (51.9, 0.3, 16.0, None),  # tab:pinn_conflict_rates, line 2433
    ('burgers', 'two', 'pcgrad', 'none'): (35.1, 0.0, 31.6, None),  # tab:pinn_conflict_rates, line 2433
    ('burgers', 'three', 'pcgrad', 'none'): (56.6, 4.7, 45.0, None),  # tab:pinn_conflict_rates, line 2433
    ('kovasznay', 'two', 'pcgrad', 'none'): (2.2, 0.0, 0.6, None),  # tab:pinn_conflict_rates, line 2433
    ('schrodinger', 'two', 'pcgrad', 'gua'): (32.3, 0.0, 5.1, 0.0),  # tab:pinn_conflict_rates, line 2434
    ('schrodinger', 'three', 'pcgrad', 'gua'): (49.6, 0.4, 16.2, 0.0),  # tab:pinn_conflict_rates, line 2434
    ('burgers', 'two', 'pcgrad', 'gua'): (33.8, 0.0, 29.9, 0.0),  # tab:pinn_conflict_rates, line 2434
    ('burgers', 'three', 'pcgrad', 'gua'): (63.8, 4.8, 51.7, 0.0),  # tab:pinn_conflict_rates, line 2434
    ('kovasznay', 'two', 'pcgrad', 'gua'): (1.1, 0.0, 0.2, 0.0),  # tab:pinn_conflict_rates, line 2434
    ('schrodinger', 'two', 'cagrad', 'none'): (35.0, 5.1, 15.4, None),  # tab:pinn_conflict_rates, line 2436
    ('schrodinger', 'three', 'cagrad', 'none'): (43.7, 7.4, 23.0, None),  # tab:pinn_conflict_rates, line 2436
    ('burgers', 'two', 'cagrad', 'none'): (31.1, 3.8, 27.1, None),  # tab:pinn_conflict_rates, line 2436
    ('burgers', 'three', 'cagrad', 'none'): (56.1, 12.4, 42.5, None),  # tab:pinn_conflict_rates, line 2436
    ('kovasznay', 'two', 'cagrad', 'none'): (6.1, 1.4, 7.9, None),  # tab:pinn_conflict_rates, line 2436
    ('schrodinger', 'two', 'cagrad', 'gua'): (29.5, 1.2, 7.1, 0.0),  # tab:pinn_conflict_rates, line 2437
    ('schrodinger', 'three', 'cagrad', 'gua'): (41.9, 3.5, 15.8, 0.0),  # tab:pinn_conflict_rates, line 2437
    ('burgers', 'two', 'cagrad', 'gua'): (29.0, 3.8, 21.6, 0.0),  # tab:pinn_conflict_rates, line 2437
    ('burgers', 'three', 'cagrad', 'gua'): (63.2, 16.3, 43.0, 0.0),  # tab:pinn_conflict_rates, line 2437
    ('kovasznay', 'two', 'cagrad', 'gua'): (1.9, 0.1, 6.6, 0.0),  # tab:pinn_conflict_rates, line 2437
    ('schrodinger', 'two', 'imtlg', 'none'): (67.8, 0.0, 33.2, None),  # tab:pinn_conflict_rates, line 2439
    ('schrodinger', 'three', 'imtlg', 'none'): (94.4, 16.7, 53.4, None),  # tab:pinn_conflict_rates, line 2439
    ('burgers', 'two', 'imtlg', 'none'): (41.9, 0.0, 23.7, None),  # tab:pinn_conflict_rates, line 2439
    ('burgers', 'three', 'imtlg', 'none'): (94.5, 1.7, 55.6, None),  # tab:pinn_conflict_rates, line 2439
    ('kovasznay', 'two', 'imtlg', 'none'): (3.6, 0.0, 4.8, None),  # tab:pinn_conflict_rates, line 2439
    ('schrodinger', 'two', 'imtlg', 'gua'): (52.8, 0.0, 22.5, 0.0),  # tab:pinn_conflict_rates, line 2440
    ('schrodinger', 'three', 'imtlg', 'gua'): (86.8, 2.3, 44.2, 0.0),  # tab:pinn_conflict_rates, line 2440
    ('burgers', 'two', 'imtlg', 'gua'): (33.5, 0.0, 15.7, 0.0),  # tab:pinn_conflict_rates, line 2440
    ('burgers', 'three', 'imtlg', 'gua'): (84.3, 3.1, 49.0, 0.0),  # tab:pinn_conflict_rates, line 2440
    ('kovasznay', 'two', 'imtlg', 'gua'): (0.9, 0.0, 2.9, 0.0),  # tab:pinn_conflict_rates, line 2440
    ('schrodinger', 'two', 'amtl', 'none'): (33.6, 0.2, 18.3, None),  # tab:pinn_conflict_rates, line 2442
    ('schrodinger', 'three', 'amtl', 'none'): (57.7, 4.5, 37.5, None),  # tab:pinn_conflict_rates, line 2442
    ('burgers', 'two', 'amtl', 'none'): (27.5, 0.8, 34.2, None),  # tab:pinn_conflict_rates, line 2442
    ('burgers', 'three', 'amtl', 'none'): (66.8, 9.4, 57.2, None),  # tab:pinn_conflict_rates, line 2442
    ('kovasznay', 'two', 'amtl', 'none'): (5.0, 0.1, 11.5, None),  # tab:pinn_conflict_rates, line 2442
    ('schrodinger', 'two', 'amtl', 'gua'): (27.2, 0.1, 15.9, 0.0),  # tab:pinn_conflict_rates, line 2443
    ('schrodinger', 'three', 'amtl', 'gua'): (44.5, 0.6, 29.4, 0.0),  # tab:pinn_conflict_rates, line 2443
    ('burgers', 'two', 'amtl', 'gua'): (30.2, 1.1, 35.7, 0.0),  # tab:pinn_conflict_rates, line 2443
    ('burgers', 'three', 'amtl', 'gua'): (63.7, 4.9, 57.4, 0.0),  # tab:pinn_conflict_rates, line 2443
    ('kovasznay', 'two', 'amtl', 'gua'): (2.2, 0.0, 9.5, 0.0),  # tab:pinn_conflict_rates, line 2443
    ('schrodinger', 'two', 'upgrad', 'none'): (35.7, 0.4, 6.2, None),  # tab:pinn_conflict_rates, line 2445
    ('schrodinger', 'three', 'upgrad', 'none'): (50.5, 3.8, 13.2, None),  # tab:pinn_conflict_rates, line 2445
    ('burgers', 'two', 'upgrad', 'none'): (33.5, 4.7, 29.0, None),  # tab:pinn_conflict_rates, line 2445
    ('burgers', 'three', 'upgrad', 'none'): (54.0, 8.8, 41.1, None),  # tab:pinn_conflict_rates, line 2445
    ('kovasznay', 'two', 'upgrad', 'none'): (2.3, 0.0, 0.7, None),  # tab:pinn_conflict_rates, line 2445
    ('schrodinger', 'two', 'upgrad', 'gua'): (31.6, 0.4, 4.8, 0.0),  # tab:pinn_conflict_rates, line 2446
    ('schrodinger', 'three', 'upgrad', 'gua'): (50.4, 5.2, 14.8, 0.0),  # tab:pinn_conflict_rates, line 2446
    ('burgers', 'two', 'upgrad', 'gua'): (32.6, 7.4, 28.2, 0.0),  # tab:pinn_conflict_rates, line 2446
    ('burgers', 'three', 'upgrad', 'gua'): (60.3, 18.5, 47.4, 0.0),  # tab:pinn_conflict_rates, line 2446
    ('kovasznay', 'two', 'upgrad', 'gua'): (1.1, 0.0, 0.2, 0.0),  # tab:pinn_conflict_rates, line 2446
    ('schrodinger', 'two', 'config', 'none'): (40.8, 0.0, 23.7, None),  # tab:pinn_conflict_rates, line 2448
    ('schrodinger', 'three', 'config', 'none'): (56.3, 0.0, 35.2, None),  # tab:pinn_conflict_rates, line 2448
    ('burgers', 'two', 'config', 'none'): (30.5, 0.0, 29.4, None),  # tab:pinn_conflict_rates, line 2448
    ('burgers', 'three', 'config', 'none'): (73.7, 0.0, 57.4, None),  # tab:pinn_conflict_rates, line 2448
    ('kovasznay', 'two', 'config', 'none'): (5.5, 0.0, 6.4, None),  # tab:pinn_conflict_rates, line 2448
    ('schrodinger', 'two', 'config', 'gua'): (33.8, 0.0, 13.9, 0.0),  # tab:pinn_conflict_rates, line 2449
    ('schrodinger', 'three', 'config', 'gua'): (50.7, 0.0, 27.6, 0.0),  # tab:pinn_conflict_rates, line 2449
    ('burgers', 'two', 'config', 'gua'): (30.0, 0.0, 24.2, 0.0),  # tab:pinn_conflict_rates, line 2449
    ('burgers', 'three', 'config', 'gua'): (73.0, 0.0, 55.3, 0.0),  # tab:pinn_conflict_rates, line 2449
    ('kovasznay', 'two', 'config', 'gua'): (1.5, 0.0, 6.1, 0.0),  # tab:pinn_conflict_rates, line 2449
    ('heat_ms', 'two', 'none', 'none'): (14.0, 7.5, 4.8, None),  # tab:pinn_conflict_rates, line 2466
    ('heat_ms', 'three', 'none', 'none'): (72.8, 40.1, 54.1, None),  # tab:pinn_conflict_rates, line 2466
    ('beltrami', 'two', 'none', 'none'): (1.6, 0.2, 0.2, None),  # tab:pinn_conflict_rates, line 2466
    ('beltrami', 'three', 'none', 'none'): (4.2, 0.6, 0.5, None),  # tab:pinn_conflict_rates, line 2466
    ('poisson5d', 'two', 'none', 'none'): (41.3, 7.2, 3.8, None),  # tab:pinn_conflict_rates, line 2466
    ('heat_ms', 'two', 'none', 'gua'): (17.6, 6.8, 2.4, 0.0),  # tab:pinn_conflict_rates, line 2467
    ('heat_ms', 'three', 'none', 'gua'): (32.9, 17.7, 19.9, 0.0),  # tab:pinn_conflict_rates, line 2467
    ('beltrami', 'two', 'none', 'gua'): (2.0, 0.2, 0.8, 0.0),  # tab:pinn_conflict_rates, line 2467
    ('beltrami', 'three', 'none', 'gua'): (3.6, 0.4, 1.6, 0.0),  # tab:pinn_conflict_rates, line 2467
    ('poisson5d', 'two', 'none', 'gua'): (41.3, 4.5, 3.7, 0.0),  # tab:pinn_conflict_rates, line 2467
    ('heat_ms', 'two', 'pcgrad', 'none'): (14.9, 0.0, 5.1, None),  # tab:pinn_conflict_rates, line 2469
    ('heat_ms', 'three', 'pcgrad', 'none'): (77.6, 6.2, 57.7, None),  # tab:pinn_conflict_rates, line 2469
    ('beltrami', 'two', 'pcgrad', 'none'): (1.2, 0.0, 0.2, None),  # tab:pinn_conflict_rates, line 2469
    ('beltrami', 'three', 'pcgrad', 'none'): (3.6, 0.1, 0.3, None),  # tab:pinn_conflict_rates, line 2469
    ('poisson5d', 'two', 'pcgrad', 'none'): (24.1, 0.0, 3.8, None),  # tab:pinn_conflict_rates, line 2469
    ('heat_ms', 'two', 'pcgrad', 'gua'): (14.6, 0.0, 2.2, 0.0),  # tab:pinn_conflict_rates, line 2470
    ('heat_ms', 'three', 'pcgrad', 'gua'): (34.6, 0.7, 17.9, 0.0),  # tab:pinn_conflict_rates, line 2470
    ('beltrami', 'two', 'pcgrad', 'gua'): (1.7, 0.0, 0.6, 0.0),  # tab:pinn_conflict_rates, line 2470
    ('beltrami', 'three', 'pcgrad', 'gua'): (3.6, 0.0, 1.1, 0.0),  # tab:pinn_conflict_rates, line 2470
    ('poisson5d', 'two', 'pcgrad', 'gua'): (42.4, 0.0, 4.3, 0.0),  # tab:pinn_conflict_rates, line 2470
    ('heat_ms', 'two', 'cagrad', 'none'): (20.4, 1.7, 14.3, None),  # tab:pinn_conflict_rates, line 2472
    ('heat_ms', 'three', 'cagrad', 'none'): (78.9, 21.8, 60.2, None),  # tab:pinn_conflict_rates, line 2472
    ('beltrami', 'two', 'cagrad', 'none'): (5.8, 0.3, 4.9, None),  # tab:pinn_conflict_rates, line 2472
    ('beltrami', 'three', 'cagrad', 'none'): (20.2, 0.9, 10.8, None),  # tab:pinn_conflict_rates, line 2472
    ('poisson5d', 'two', 'cagrad', 'none'): (48.5, 5.1, 22.9, None),  # tab:pinn_conflict_rates, line 2472
    ('heat_ms', 'two', 'cagrad', 'gua'): (20.1, 1.6, 14.2, 0.0),  # tab:pinn_conflict_rates, line 2473
    ('heat_ms', 'three', 'cagrad', 'gua'): (37.8, 2.8, 21.0, 0.0),  # tab:pinn_conflict_rates, line 2473
    ('beltrami', 'two', 'cagrad', 'gua'): (7.9, 0.1, 5.6, 0.0),  # tab:pinn_conflict_rates, line 2473
    ('beltrami', 'three', 'cagrad', 'gua'): (13.6, 0.1, 6.7, 0.0),  # tab:pinn_conflict_rates, line 2473
    ('poisson5d', 'two', 'cagrad', 'gua'): (35.9, 0.2, 14.0, 0.0),  # tab:pinn_conflict_rates, line 2473
    ('heat_ms', 'two', 'imtlg', 'none'): (53.7, 0.0, 30.6, None),  # tab:pinn_conflict_rates, line 2475
    ('heat_ms', 'three', 'imtlg', 'none'): (88.5, 5.4, 18.7, None),  # tab:pinn_conflict_rates, line 2475
    ('beltrami', 'two', 'imtlg', 'none'): (5.1, 0.0, 5.9, None),  # tab:pinn_conflict_rates, line 2475
    ('beltrami', 'three', 'imtlg', 'none'): (89.5, 0.0, 28.1, None),  # tab:pinn_conflict_rates, line 2475
    ('poisson5d', 'two', 'imtlg', 'none'): (51.0, 0.0, 33.8, None),  # tab:pinn_conflict_rates, line 2475
    ('heat_ms', 'two', 'imtlg', 'gua'): (28.9, 0.0, 13.4, 0.0),  # tab:pinn_conflict_rates, line 2476
    ('heat_ms', 'three', 'imtlg', 'gua'): (60.9, 4.1, 36.3, 0.0),  # tab:pinn_conflict_rates, line 2476
    ('beltrami', 'two', 'imtlg', 'gua'): (4.1, 0.0, 4.4, 0.0),  # tab:pinn_conflict_rates, line 2476
    ('beltrami', 'three', 'imtlg', 'gua'): (24.5, 0.1, 10.7, 0.0),  # tab:pinn_conflict_rates, line 2476
    ('poisson5d', 'two', 'imtlg', 'gua'): (44.1, 0.0, 26.2, 0.0),  # tab:pinn_conflict_rates, line 2476
    ('heat_ms', 'two', 'amtl', 'none'): (23.7, 0.1, 17.7, None),  # tab:pinn_conflict_rates, line 2478
    ('heat_ms', 'three', 'amtl', 'none'): (75.4, 15.0, 64.1, None),  # tab:pinn_conflict_rates, line 2478
    ('beltrami', 'two', 'amtl', 'none'): (14.5, 0.0, 14.8, None),  # tab:pinn_conflict_rates, line 2478
    ('beltrami', 'three', 'amtl', 'none'): (28.2, 0.0, 19.9, None),  # tab:pinn_conflict_rates, line 2478
    ('poisson5d', 'two', 'amtl', 'none'): (48.4, 0.4, 30.8, None),  # tab:pinn_conflict_rates, line 2478
    ('heat_ms', 'two', 'amtl', 'gua'): (26.2, 0.3, 11.8, 0.0),  # tab:pinn_conflict_rates, line 2479
    ('heat_ms', 'three', 'amtl', 'gua'): (55.8, 3.5, 27.9, 0.0),  # tab:pinn_conflict_rates, line 2479
    ('beltrami', 'two', 'amtl', 'gua'): (10.2, 0.0, 9.7, 0.0),  # tab:pinn_conflict_rates, line 2479
    ('beltrami', 'three', 'amtl', 'gua'): (14.3, 0.0, 13.0, 0.0),  # tab:pinn_conflict_rates, line 2479
    ('poisson5d', 'two', 'amtl', 'gua'): (42.3, 0.0, 25.0, 0.0),  # tab:pinn_conflict_rates, line 2479
    ('heat_ms', 'two', 'upgrad', 'none'): (13.1, 0.4, 4.7, None),  # tab:pinn_conflict_rates, line 2481
    ('heat_ms', 'three', 'upgrad', 'none'): (78.3, 12.3, 55.5, None),  # tab:pinn_conflict_rates, line 2481
    ('beltrami', 'two', 'upgrad', 'none'): (1.2, 0.0, 0.2, None),  # tab:pinn_conflict_rates, line 2481
    ('beltrami', 'three', 'upgrad', 'none'): (3.3, 0.0, 0.3, None),  # tab:pinn_conflict_rates, line 2481
    ('poisson5d', 'two', 'upgrad', 'none'): (23.7, 0.0, 3.9, None),  # tab:pinn_conflict_rates, line 2481
    ('heat_ms', 'two', 'upgrad', 'gua'): (15.4, 0.4, 2.4, 0.0),  # tab:pinn_conflict_rates, line 2482
    ('heat_ms', 'three', 'upgrad', 'gua'): (33.8, 4.8, 16.1, 0.0),  # tab:pinn_conflict_rates, line 2482
    ('beltrami', 'two', 'upgrad', 'gua'): (1.8, 0.0, 0.7, 0.0),  # tab:pinn_conflict_rates, line 2482
    ('beltrami', 'three', 'upgrad', 'gua'): (4.5, 0.0, 1.2, 0.0),  # tab:pinn_conflict_rates, line 2482
    ('poisson5d', 'two', 'upgrad', 'gua'): (42.2, 0.0, 4.2, 0.0),  # tab:pinn_conflict_rates, line 2482
    ('heat_ms', 'two', 'config', 'none'): (22.8, 0.0, 12.8, None),  # tab:pinn_conflict_rates, line 2484
    ('heat_ms', 'three', 'config', 'none'): (81.3, 0.0, 64.6, None),  # tab:pinn_conflict_rates, line 2484
    ('beltrami', 'two', 'config', 'none'): (13.1, 0.0, 11.6, None),  # tab:pinn_conflict_rates, line 2484
    ('beltrami', 'three', 'config', 'none'): (27.5, 0.0, 16.8, None),  # tab:pinn_conflict_rates, line 2484
    ('poisson5d', 'two', 'config', 'none'): (52.6, 0.0, 30.5, None),  # tab:pinn_conflict_rates, line 2484
    ('heat_ms', 'two', 'config', 'gua'): (27.7, 0.0, 9.7, 0.0),  # tab:pinn_conflict_rates, line 2485
    ('heat_ms', 'three', 'config', 'gua'): (48.6, 0.0, 26.6, 0.0),  # tab:pinn_conflict_rates, line 2485
    ('beltrami', 'two', 'config', 'gua'): (7.4, 0.0, 7.6, 0.0),  # tab:pinn_conflict_rates, line 2485
    ('beltrami', 'three', 'config', 'gua'): (12.8, 0.0, 8.8, 0.0),  # tab:pinn_conflict_rates, line 2485
    ('poisson5d', 'two', 'config', 'gua'): (44.1, 0.0, 22.3, 0.0),  # tab:pinn_conflict_rates, line 2485
}

PROBLEMS = ("schrodinger", "burgers", "heat_ms", "kovasznay", "beltrami", "poisson5d")
GROUPINGS = ("two", "three")
OPTIMIZERS = ("sgd", "msgd", "rmsprop", "adam", "adamw", "sophiag", "adahessian", "soap")
METHODS = ("none", "pcgrad", "cagrad", "imtlg", "amtl", "upgrad", "config")
#: how the paper names them
LABELS = {"sgd": "SGD", "msgd": "M-SGD", "rmsprop": "RMSProp", "adam": "Adam", "adamw": "AdamW", "sophiag": "SophiaG",
          "adahessian": "AdaHessian", "soap": "SOAP", "none": "Adam", "pcgrad": "PCGrad", "cagrad": "CAGrad",
          "imtlg": "IMTL-G", "amtl": "A-MTL", "upgrad": "UPGrad", "config": "ConFIG",
          "schrodinger": "Schrödinger", "burgers": "Burgers", "heat_ms": "Heat-MS", "kovasznay": "Kovasznay",
          "beltrami": "Beltrami", "poisson5d": "Poisson-5D", "two": "2-loss", "three": "3-loss"}


#: The optimizer statement gum runs for a bare name: the paper's default learning rate for every optimizer
#: ("100-epoch warmup, then cosine decay from 1e-3 to 1e-4", Table tab:global_training_settings, line 1706;
#: the spec's warmup_cosine schedule supplies the warmup and the 1e-4 floor) with each optimizer's own
#: remaining defaults (betas, eps, Hessian interval: the registry's, which are the official ones).  The
#: registry defaults of SophiaG (1e-4), AdaHessian (0.15) and SOAP (3e-3) are their authors' learning rates,
#: not the paper's.
PAPER_LR = 1e-3


def paper_optimizer(name: str) -> str:
    """``adam`` -> ``adam(lr = 0.001)``; a call with arguments is kept as given."""
    return name if "(" in name else f"{name}(lr = {PAPER_LR!r})"


def gum(problem: str, grouping: str, optimizer: str) -> tuple[float, float, float] | None:
    """The paper's (R_g, R_a, R_u) in % for ConFIG + ``optimizer``, or None when not reported."""
    return GUM.get((problem, grouping, optimizer))


def q2_l2(problem: str, grouping: str, method: str, align: str) -> tuple[float, float, float | None] | None:
    """The paper's (mean, std, Imp. %) relative L2 error, or None when not reported."""
    return Q2_L2.get((problem, grouping, method, align))


def q2_rates(problem: str, grouping: str, method: str, align: str):
    """The paper's (R_g, R_a, R_u, R_p) in %, or None when not reported."""
    return Q2_RATES.get((problem, grouping, method, align))


#: Q3 (same-state, norm-matched comparison, ConFIG + Adam + GUA): (problem, grouping) ->
#: (Pr[W_rel(p) < W_rel(u)], Pr[W_rel(p) < W_rel(q)]) in %, q = (||p|| / ||u||) u.  "All reported samples
#: satisfy p_t != 0"; training states are aggregated within each run, then across five seeds.
#: Table tab:q3_equation_win_rates, Appendix "Same-State Norm-Matched Comparison"
#: (app:same_state_counterfactual_details).
Q3_WIN_RATES: dict[tuple[str, str], tuple[float, float]] = {
    ('schrodinger', 'two'): (95.81, 92.68),  # tab:q3_equation_win_rates, line 2572
    ('schrodinger', 'three'): (96.26, 93.53),  # tab:q3_equation_win_rates, line 2572
    ('burgers', 'two'): (96.55, 95.17),  # tab:q3_equation_win_rates, line 2573
    ('burgers', 'three'): (94.57, 93.55),  # tab:q3_equation_win_rates, line 2573
    ('heat_ms', 'two'): (97.92, 96.54),  # tab:q3_equation_win_rates, line 2574
    ('heat_ms', 'three'): (93.16, 92.47),  # tab:q3_equation_win_rates, line 2574
    ('beltrami', 'two'): (94.77, 93.38),  # tab:q3_equation_win_rates, line 2575
    ('beltrami', 'three'): (94.05, 93.00),  # tab:q3_equation_win_rates, line 2575
    ('kovasznay', 'two'): (98.25, 97.54),  # tab:q3_equation_win_rates, line 2576
    ('poisson5d', 'two'): (89.94, 85.77),  # tab:q3_equation_win_rates, line 2577
}
#: The table's "Overall" row per grouping (the mean of the settings above): grouping -> (p < u, p < q) in %.
Q3_OVERALL: dict[str, tuple[float, float]] = {
    'two': (95.54, 93.51),  # tab:q3_equation_win_rates, line 2579
    'three': (94.51, 93.14),  # tab:q3_equation_win_rates, line 2579
}
#: Across all 10 PINN settings (the unweighted mean of Q3_WIN_RATES): (p < u, p < q) in %.
#: Section "Q3: Direction Alignment Mechanism" (answer to Q3), lines 622-623.
Q3_ALL_SETTINGS = (95.1, 93.4)

#: Q4 (state-alignment ablation, ConFIG + Adam): none, (rho_m, rho_v) = (0, 0), soft, (1, 0), (1, 1).  The
#: paper gives it as a figure only (fig:state_alignment, section "Q4: State Alignment Mechanism", lines
#: 640-670): no per-variant numbers are published.  Its "none" and "soft" variants are the ConFIG rows of
#: tab:full_q2_results (Q2_L2 above: ConFIG + Adam without / with GUA at the rho below).
#: The soft coefficients per PDE: problem -> (rho_m, rho_v), chosen on validation and shared across groupings
#: and surgery methods.  Table tab:state_alignment_rho, Appendix "Optimizer-State Alignment"
#: (app:optimizer_state_alignment).
STATE_ALIGNMENT_RHO: dict[str, tuple[float, float]] = {
    'burgers': (0.10, 0.03),  # tab:state_alignment_rho, line 2162
    'schrodinger': (0.10, 0.03),  # tab:state_alignment_rho, line 2163
    'kovasznay': (0.70, 0.20),  # tab:state_alignment_rho, line 2164
    'heat_ms': (0.70, 0.20),  # tab:state_alignment_rho, line 2165
    'poisson5d': (0.50, 0.15),  # tab:state_alignment_rho, line 2166
    'beltrami': (0.70, 0.20),  # tab:state_alignment_rho, line 2167
}


def q3_win_rates(problem: str, grouping: str) -> tuple[float, float] | None:
    """The paper's (p < u, p < q) win rates in % for one setting, or None when not reported."""
    return Q3_WIN_RATES.get((problem, grouping))
