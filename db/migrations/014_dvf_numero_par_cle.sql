-- Sales are found at a BAN number by the key attached to them (dvf_mutations_cle_ban), no longer by an index of
-- DVF's own street code and number. That index was for a BAN imported after the sales: both importers now attach
-- the keys (attachBanKeys in domain/dvf/import.ts, after each DVF and each BAN import), a key whose address left
-- the BAN included. It cost an import more than any other index (0.2 s of 1.7 s of builds per vintage of 142,000
-- mutations, bench/RESULTS.md). The street code and number still say how a sale is attached (`rattachement`), and
-- an address known only from its DPE, which has no key attached, still finds its sales by them, through the commune's
-- index.
DROP INDEX dvf_mutations_numero;
